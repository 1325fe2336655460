"""Hostile inputs whose cost the file chooses in the tokenizer, GGUF and number paths: each bounded by the
work it asks for (look-ups, keys read, characters a normalizer can make), refused in one line past it.

Registered in the catalogue of ``tests/malformed.py`` (run by ``tests/test_untrusted_cli.py``)."""

from __future__ import annotations

import os
import struct
from pathlib import Path
from typing import Any

from malformed import (
    CONFIG,
    GGUF_TOKENS,
    HIDDEN,
    _data,
    _gkv,
    _gs,
    _gtensor,
    _gtokens,
    _jsonl,
    case,
    gguf_bytes,
    tokenizer_json,
    write_json,
)

# --- GGUF work: marker look-ups, every part of a split model ------------------------------

CONTROL = 3


def _types(types: list[int]) -> bytes:
    return _gkv("tokenizer.ggml.token_type", 9, struct.pack("<IQ", 5, len(types)) + struct.pack(f"<{len(types)}i", *types))


def _vocab_gguf(extra: list[bytes], template: str) -> bytes:
    """A GGUF of the 8 base tokens plus ``extra`` control tokens, a matching token_embd, and ``template``."""
    tokens = GGUF_TOKENS + extra
    types = [2, 3, 3] + [1] * (len(GGUF_TOKENS) - 3) + [CONTROL] * len(extra)
    kvs = [_gkv("general.architecture", 8, _gs(b"llama")), _gkv("tokenizer.ggml.model", 8, _gs(b"llama")),
           _gtokens(tokens), _types(types), _gkv("tokenizer.chat_template", 8, _gs(template.encode()))]
    return gguf_bytes(kvs, [_gtensor(dims=(HIDDEN, len(tokens)))], data=bytes(len(tokens) * HIDDEN * 4))


@case("gguf work", "model.gguf", says="look-ups")
def gguf_13mb_template_of_markers_against_100k_control_tokens(folder: Path) -> list[str]:
    """1,000,000 distinct markers that are no token, against 100,000 control tokens: a regular expression
    of every control token took ~11 minutes; look-ups are bounded in all."""
    template = "".join(f"<|x{i}|>" for i in range(1_100_000))
    (folder / "model.gguf").write_bytes(_vocab_gguf([f"<|c{i}|>".encode() for i in range(100_000)], template))
    return [str(folder / "model.gguf")]


@case("gguf work", exit_codes=(0, 1))
def gguf_template_of_100k_control_token_markers(folder: Path) -> list[str]:
    """Every marker is one control token: one look-up each, audited."""
    extra = [f"<|c{i}|>" for i in range(100_000)]
    (folder / "model.gguf").write_bytes(_vocab_gguf([e.encode() for e in extra], "".join(extra)))
    return [str(folder / "model.gguf")]


def _keys(n: int, prefix: str) -> list[bytes]:
    return [_gkv(f"{prefix}.k{i}", 4, struct.pack("<I", i)) for i in range(n)]


def _split(folder: Path, count: int) -> Path:
    """Part 1 of a ``count``-part GGUF (its vocabulary and token_embd); the caller writes the other parts."""
    first = folder / f"model-00001-of-{count:05d}.gguf"
    kvs = [_gkv("general.architecture", 8, _gs(b"llama")), _gtokens(), _gkv("split.count", 2, struct.pack("<H", count))]
    first.write_bytes(gguf_bytes(kvs))
    return first


def _part(folder: Path, no: int, count: int) -> Path:
    return folder / f"model-{no:05d}-of-{count:05d}.gguf"


@case("gguf work", "-of-01000.gguf", says="keys and tensors together")
def gguf_1000_parts_of_100k_keys(folder: Path) -> list[str]:
    """1,000 parts of 100,000 keys each (links inside the folder to one file): ~26 minutes read part by part;
    the keys and tensors of all the parts together are bounded."""
    first = _split(folder, 1000)
    other = _part(folder, 2, 1000)
    other.write_bytes(gguf_bytes(_keys(100_000, "x"), []))
    for no in range(3, 1001):
        _part(folder, no, 1000).symlink_to(other.name)
    return [str(first)]


@case("gguf work", exit_codes=(0,))
def gguf_split_in_two_healthy(folder: Path) -> list[str]:
    first = _split(folder, 2)
    _part(folder, 2, 2).write_bytes(gguf_bytes([_gkv("split.no", 2, struct.pack("<H", 1))], [_gtensor("output.weight")]))
    return [str(first)]


@case("gguf work", "model-00002-of-00002.gguf", says="points outside")
def gguf_split_part_links_outside(folder: Path) -> list[str]:
    first = _split(folder, 2)
    outside = folder.parent / "outside.gguf"
    outside.write_bytes(gguf_bytes([_gkv("split.no", 2, struct.pack("<H", 1))], [_gtensor("output.weight")]))
    _part(folder, 2, 2).symlink_to(outside)
    return [str(first)]


@case("gguf work", "model-00002-of-00002.gguf")
def gguf_split_part_is_a_fifo(folder: Path) -> list[str]:
    first = _split(folder, 2)
    os.mkfifo(_part(folder, 2, 2))
    return [str(first)]


@case("gguf work", "model-00002-of-00002.gguf")
def gguf_split_part_is_a_folder(folder: Path) -> list[str]:
    first = _split(folder, 2)
    _part(folder, 2, 2).mkdir()
    return [str(first)]


@case("gguf work", "model.gguf", says="points outside")
def gguf_folder_whose_gguf_links_outside(folder: Path) -> list[str]:
    """A folder given as the target: its one GGUF is a link out of it."""
    gguf_folder = folder.parent / "gguf"
    gguf_folder.mkdir()
    outside = folder.parent / "elsewhere.gguf"
    outside.write_bytes(gguf_bytes())
    (gguf_folder / "model.gguf").symlink_to(outside)
    return [str(gguf_folder)]


# --- normalizer expansion: a chain that grows text, refused before the library runs it ------


def _normalizer(folder: Path, normalizer: dict[str, Any], added_normalized: str | None = None) -> None:
    data = tokenizer_json() | {"normalizer": normalizer}
    if added_normalized is not None:
        data["added_tokens"] = data["added_tokens"] + [
            {"id": 8, "content": added_normalized, "single_word": False, "lstrip": False, "rstrip": False,
             "normalized": True, "special": False}]
    write_json(folder / "tokenizer.json", data)


def _doublings(n: int) -> dict[str, Any]:
    return {"type": "Sequence", "normalizers": [{"type": "Replace", "pattern": {"String": "a"}, "content": "aa"}] * n}


def _rows(folder: Path) -> Path:
    data = _data(folder)
    _jsonl(data / "train.jsonl", [{"text": "a b c d " * 50} for _ in range(20)])
    return data / "train.jsonl"


@case("normalizer expansion", "tokenizer.json", says="1,073,741,824-fold")
def normalizer_30_doublings(folder: Path) -> None:
    """30 Replace("a", "aa"): the first "a" becomes 2^30 characters (the library aborted the process)."""
    _normalizer(folder, _doublings(30))


@case("normalizer expansion", "tokenizer.json", says="Replace")
def normalizer_30_doublings_with_dataset(folder: Path) -> list[str]:
    _normalizer(folder, _doublings(30))
    return [str(folder), "--dataset", str(_rows(folder))]


@case("normalizer expansion", "tokenizer.json", says="Replace")
def normalizer_30_doublings_target_gguf(folder: Path) -> list[str]:
    _normalizer(folder, _doublings(30))
    return [str(folder), "--target", "gguf"]


@case("normalizer expansion", "tokenizer.json", says="Replace")
def normalizer_doublings_and_a_normalized_added_token(folder: Path) -> None:
    """Loading the file normalizes the added token: refused before the library sees the file."""
    _normalizer(folder, _doublings(30), added_normalized="ab")


@case("normalizer expansion", "tokenizer.json", says="Replace")
def normalizer_nested_sequences_of_doublings(folder: Path) -> None:
    spec: dict[str, Any] = _doublings(2)
    for _ in range(12):
        spec = {"type": "Sequence", "normalizers": [spec, _doublings(1)]}
    _normalizer(folder, spec)


@case("normalizer expansion", "tokenizer.json", says="Replace(regex)")
def normalizer_regex_replace_with_1000_characters(folder: Path) -> None:
    """A regex that matches between characters inserts its content at every place."""
    _normalizer(folder, {"type": "Replace", "pattern": {"Regex": ""}, "content": "a" * 1000})


@case("normalizer expansion", "tokenizer.json", says="Prepend")
def normalizer_prepend_of_2m_characters(folder: Path) -> None:
    _normalizer(folder, {"type": "Prepend", "prepend": "a" * 2_000_000})


@case("normalizer expansion", exit_codes=(0, 1))
def normalizer_5_doublings_with_dataset(folder: Path) -> list[str]:
    """32-fold is under the bound: the rows are tokenized."""
    _normalizer(folder, _doublings(5))
    return [str(folder), "--dataset", str(_rows(folder))]


@case("normalizer expansion", exit_codes=(0, 1))
def normalizer_bert_and_llama_chains_pass(folder: Path) -> list[str]:
    """Real chains: BERT's normalizer (24-fold at worst), Llama-2's Prepend + Replace."""
    _normalizer(folder, {"type": "Sequence", "normalizers": [
        {"type": "BertNormalizer", "clean_text": True, "handle_chinese_chars": True, "strip_accents": None,
         "lowercase": True},
        {"type": "Prepend", "prepend": "\u2581"}, {"type": "Replace", "pattern": {"String": " "}, "content": "\u2581"}]})
    return [str(folder), "--dataset", str(_rows(folder))]


# --- huge integers: every id read from a file is range-checked where it is read ------------

HUGE = {"2_pow_31": 2**31, "2_pow_40": 2**40, "2_pow_63": 2**63, "2_pow_64": 2**64, "minus_2_pow_63": -(2**63)}


def _huge_case(name: str, build: Any, exit_codes: tuple[int, ...] = (1,), names: str | None = None) -> None:
    build.__name__ = name
    case("huge integers", names, exit_codes=exit_codes)(build)


def _image_index(value: int) -> Any:
    def build(folder: Path) -> None:
        """config.json's image id past the rows, the processor naming an existing token: the id is described."""
        write_json(folder / "config.json", CONFIG | {"image_token_index": value})
        write_json(folder / "processor_config.json", {"image_token": "<s>"})
    return build


def _processor_image_id(value: int) -> Any:
    def build(folder: Path) -> list[str]:
        write_json(folder / "processor_config.json", {"image_token_id": value, "image_token": "<s>"})
        return [str(folder), "--target", "gguf"]
    return build


def _video_audio(value: int) -> Any:
    def build(folder: Path) -> list[str]:
        write_json(folder / "config.json", CONFIG | {"video_token_id": value, "audio_token_index": value})
        return [str(folder), "--target", "vllm"]
    return build


def _special(value: int) -> Any:
    def build(folder: Path) -> None:
        write_json(folder / "config.json", CONFIG | {"bos_token_id": value, "pad_token_id": value})
        write_json(folder / "generation_config.json", {"eos_token_id": [2, value], "decoder_start_token_id": value,
                                                       "forced_bos_token_id": value, "suppress_tokens": [value]})
    return build


def _labels(value: int) -> Any:
    def build(folder: Path) -> None:
        write_json(folder / "config.json", CONFIG | {"architectures": ["LlamaForSequenceClassification"],
                                                     "id2label": {"0": "NO", str(value): "YES"},
                                                     "label2id": {"NO": 0, "YES": value}})
    return build


for _label, _value in HUGE.items():
    _huge_case(f"image_token_index_{_label}", _image_index(_value))
    _huge_case(f"processor_image_token_id_{_label}", _processor_image_id(_value))
    _huge_case(f"video_and_audio_ids_{_label}", _video_audio(_value))
    _huge_case(f"special_and_generation_ids_{_label}", _special(_value))
    _huge_case(f"id2label_key_{_label}", _labels(_value))


@case("huge integers", exit_codes=(1,))
def forced_bos_token_id_minus_2_pow_63(folder: Path) -> None:
    """-1 indexes the last column of the scores (no crash); -2**63 is past every row: IndexError."""
    write_json(folder / "generation_config.json", {"forced_bos_token_id": -(2**63)})
