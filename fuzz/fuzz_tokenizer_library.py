"""Coverage-guided fuzzing (atheris) of the tokenizers library's failure modes through the audit and the
dataset scan: padding and truncation sizes, precompiled_charsmap bytes, Split/Replace regexes and the
texts they meet. A panic (PanicException) or an abort (SIGABRT) is a crash.

    python fuzz/fuzz_tokenizer_library.py -max_total_time=60
"""

from _harness import check_tokenizer_library, main

if __name__ == "__main__":
    main("tokenizer.json", "tokenizer_library", run=check_tokenizer_library)
