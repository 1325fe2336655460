"""Coverage-guided fuzzing (atheris) of model.safetensors through the whole audit.

    python fuzz/fuzz_headers.py -max_total_time=60

Inputs starting with ``{`` get a correct 8-byte length prefix (see ``with_header_length``), so most
mutations reach the JSON and offset checks; other inputs are used as the raw file.
"""

from _harness import main, with_header_length

if __name__ == "__main__":
    main("model.safetensors", "headers", with_header_length)
