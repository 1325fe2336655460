"""Coverage-guided fuzzing (atheris) of tokenizer.json through the whole audit.

    python fuzz/fuzz_tokenizer.py -max_total_time=60
"""

from _harness import main

if __name__ == "__main__":
    main("tokenizer.json", "tokenizer")
