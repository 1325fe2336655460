"""Coverage-guided fuzzing (atheris) of tokenizer_config.json through the whole audit.

    python fuzz/fuzz_tokenizer_config.py -max_total_time=60
"""

from _harness import main

if __name__ == "__main__":
    main("tokenizer_config.json", "tokenizer_config")
