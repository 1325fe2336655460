"""Coverage-guided fuzzing (atheris) of config.json through the whole audit.

    python fuzz/fuzz_config.py -max_total_time=60
"""

from _harness import main

if __name__ == "__main__":
    main("config.json", "config")
