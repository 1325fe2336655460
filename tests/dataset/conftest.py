from dataset_builders import bert_cls, llama_lm, llama_pad_eos, minilm_cls  # noqa: F401 - shared fixtures
