"""Hostile checkpoint folders, built in microseconds from raw bytes (no transformers, no torch).

``tiny_checkpoint`` writes a healthy 8-token Llama-style folder; every entry of ``CASES`` damages one
thing in it. Used by ``tests/test_untrusted_cli.py`` (each case through the real CLI, in a subprocess
with a memory and time limit) and by ``benchmarks/robustness.py`` (the table in docs/robustness.md).
"""

from __future__ import annotations

import json
import os
import struct
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

VOCAB = ["<unk>", "<s>", "</s>", "<pad>", "a", "b", "c", "d"]
HIDDEN = 4


def safetensors_bytes(header: dict[str, Any] | bytes, data: bytes = b"", length: int | None = None) -> bytes:
    """A safetensors file: 8-byte little-endian header length, header JSON, data (length overridable)."""
    raw = header if isinstance(header, bytes) else json.dumps(header).encode()
    return struct.pack("<Q", len(raw) if length is None else length) + raw + data


def embedding_header(rows: int = len(VOCAB), hidden: int = HIDDEN) -> tuple[dict[str, Any], bytes]:
    size = rows * hidden * 4
    header = {
        "__metadata__": {"format": "pt"},
        "model.embed_tokens.weight": {"dtype": "F32", "shape": [rows, hidden], "data_offsets": [0, size]},
        "lm_head.weight": {"dtype": "F32", "shape": [rows, hidden], "data_offsets": [size, 2 * size]},
    }
    return header, bytes(2 * size)


def tokenizer_json(vocab: list[str] = VOCAB) -> dict[str, Any]:
    return {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": [
            {"id": i, "content": t, "single_word": False, "lstrip": False, "rstrip": False, "normalized": False,
             "special": True}
            for i, t in enumerate(vocab[:4])
        ],
        "normalizer": None,
        "pre_tokenizer": {"type": "Whitespace"},
        "post_processor": None,
        "decoder": None,
        "model": {"type": "WordLevel", "vocab": {t: i for i, t in enumerate(vocab)}, "unk_token": "<unk>"},
    }


CONFIG = {
    "model_type": "llama",
    "architectures": ["LlamaForCausalLM"],
    "vocab_size": len(VOCAB),
    "hidden_size": HIDDEN,
    "max_position_embeddings": 64,
    "rope_theta": 10000.0,
    "tie_word_embeddings": False,
    "bos_token_id": 1,
    "eos_token_id": 2,
    "pad_token_id": 3,
}
TOKENIZER_CONFIG = {
    "tokenizer_class": "TokenizersBackend",
    "bos_token": "<s>",
    "eos_token": "</s>",
    "unk_token": "<unk>",
    "pad_token": "<pad>",
    "model_max_length": 64,
}


def write_json(path: Path, data: Any) -> None:
    path.write_text(json.dumps(data, indent=1), encoding="utf-8")


def tiny_checkpoint(folder: Path) -> Path:
    """A healthy folder: config.json, model.safetensors, tokenizer.json, tokenizer_config.json."""
    folder.mkdir(parents=True, exist_ok=True)
    write_json(folder / "config.json", CONFIG)
    header, data = embedding_header()
    (folder / "model.safetensors").write_bytes(safetensors_bytes(header, data))
    write_json(folder / "tokenizer.json", tokenizer_json())
    write_json(folder / "tokenizer_config.json", TOKENIZER_CONFIG)
    return folder


def sparse_file(path: Path, size: int, prefix: bytes = b"") -> None:
    """A file of ``size`` bytes that uses no disk (a hole after ``prefix``)."""
    with open(path, "wb") as fh:
        fh.write(prefix)
        fh.truncate(size)


@dataclass(frozen=True)
class Case:
    """One hostile input: ``build(folder)`` damages a healthy checkpoint and returns the CLI arguments.

    ``exit_codes``: what the CLI may answer (2 = refused with one line; 0/1 = audited).
    ``names``: a file name the error line must contain (when the exit code is 2).
    """

    name: str
    group: str
    build: Callable[[Path], list[str]]
    names: str | None = None
    exit_codes: tuple[int, ...] = (2,)
    hub: bool = False  # audited as a Hub id served by tests/hub_server.py (see HUB_REPOS and hub_env)
    says: str | None = None  # text the error line must also contain (the fix it names)


CASES: list[Case] = []


def case(group: str, names: str | None = None, exit_codes: tuple[int, ...] = (2,), hub: bool = False,
         says: str | None = None):
    def register(build: Callable[[Path], list[str] | None]) -> Callable[[Path], list[str] | None]:
        def run(folder: Path) -> list[str]:
            tiny_checkpoint(folder)
            args = build(folder) or [str(folder)]
            if hub:  # serve the damaged folder as a Hub repository named after the case
                repo = f"org/{build.__name__}"
                HUB_REPOS[repo] = {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if p.is_file()}
                return [repo, *HUB_ARGS.get(repo, [])]
            return args

        CASES.append(Case(build.__name__, group, run, names, exit_codes, hub, says))
        return build

    return register


HUB_REPOS: dict[str, dict[str, bytes]] = {}  # repo id -> files, filled by the hub cases' build()
HUB_DECLARED: dict[str, dict[str, int]] = {}  # repo id -> sizes its HEAD answers declare (a lying server)
HUB_IGNORES_RANGE: dict[str, frozenset[str]] = {}  # repo id -> files its GET sends whole, ignoring Range
HUB_MISBEHAVE: dict[str, dict[str, Any]] = {}  # repo id -> tests/hub_server.py Misbehaviour per API or file name
HUB_ARGS: dict[str, list[str]] = {}  # repo id -> more arguments for check (a short --hub-timeout)
HUB_TOKEN = "hf_catalogue_token"


def hub_env(url: str, home: Path) -> dict[str, str]:
    """Environment for auditing the hub cases against a tests/hub_server.py server at ``url``."""
    return {"HF_ENDPOINT": url, "HF_HOME": str(home), "HF_HUB_OFFLINE": "0", "HF_TOKEN": HUB_TOKEN,
            "HF_HUB_DISABLE_TELEMETRY": "1"}


def serve_hub_cases() -> Any:
    """A running tests/hub_server.py server for :data:`HUB_REPOS` (a context manager)."""
    import hashlib

    from hub_server import HubServer, Repo

    return HubServer({rid: Repo(files, hashlib.sha1(repr(sorted(files)).encode()).hexdigest(),
                                declared=HUB_DECLARED.get(rid, {}),
                                ignores_range=HUB_IGNORES_RANGE.get(rid, frozenset()),
                                misbehave=HUB_MISBEHAVE.get(rid, {}))
                      for rid, files in HUB_REPOS.items()})


# --- safetensors ---------------------------------------------------------------------------------


def _st(folder: Path, header: dict[str, Any] | bytes, data: bytes = b"", length: int | None = None) -> None:
    (folder / "model.safetensors").write_bytes(safetensors_bytes(header, data, length))


def _entry(dtype: str = "F32", shape: Any = (8, 4), offsets: Any = (0, 128)) -> dict[str, Any]:
    return {"dtype": dtype, "shape": list(shape) if isinstance(shape, tuple) else shape,
            "data_offsets": list(offsets) if isinstance(offsets, tuple) else offsets}


@case("safetensors", "model.safetensors")
def header_length_2_pow_63(folder: Path) -> None:
    _st(folder, b"{}", length=2**63)


@case("safetensors", "model.safetensors")
def header_length_max_u64(folder: Path) -> None:
    _st(folder, b"{}", length=2**64 - 1)


@case("safetensors", "model.safetensors")
def header_bigger_than_file(folder: Path) -> None:
    _st(folder, b'{"a": 1}', length=4096)


@case("safetensors", "model.safetensors")
def header_over_100mb_limit_sparse(folder: Path) -> None:
    sparse_file(folder / "model.safetensors", 200 * 2**20, struct.pack("<Q", 150 * 2**20) + b"{")


@case("safetensors", "model.safetensors")
def file_shorter_than_8_bytes(folder: Path) -> None:
    (folder / "model.safetensors").write_bytes(b"\x01\x02\x03")


@case("safetensors", "model.safetensors")
def file_empty(folder: Path) -> None:
    (folder / "model.safetensors").write_bytes(b"")


@case("safetensors", "model.safetensors")
def header_length_zero(folder: Path) -> None:
    _st(folder, b"")


@case("safetensors", "model.safetensors")
def header_invalid_utf8(folder: Path) -> None:
    _st(folder, b'{"\xff\xfe": 1}')


@case("safetensors", "model.safetensors")
def header_invalid_json(folder: Path) -> None:
    _st(folder, b'{"model.embed_tokens.weight": {"dtype": "F32",')


@case("safetensors", "model.safetensors")
def header_not_an_object(folder: Path) -> None:
    _st(folder, b"[1, 2, 3]")


@case("safetensors", "model.safetensors")
def header_nested_100k_deep(folder: Path) -> None:
    _st(folder, b"[" * 100_000 + b"]" * 100_000)


@case("safetensors", "model.safetensors")
def header_nested_objects_100k_deep(folder: Path) -> None:
    _st(folder, b'{"a":' * 100_000 + b"1" + b"}" * 100_000)


@case("safetensors", "model.safetensors")
def header_nan_literal(folder: Path) -> None:
    _st(folder, b'{"w": {"dtype": "F32", "shape": [NaN], "data_offsets": [0, 4]}}', bytes(4))


@case("safetensors", "model.safetensors")
def entry_not_an_object(folder: Path) -> None:
    _st(folder, {"w": [1, 2]})


@case("safetensors", "model.safetensors")
def unknown_dtype(folder: Path) -> None:
    _st(folder, {"w": _entry(dtype="F128")}, bytes(128))


@case("safetensors", "model.safetensors")
def dtype_not_a_string(folder: Path) -> None:
    _st(folder, {"w": _entry(dtype=["F32"])}, bytes(128))


@case("safetensors", "model.safetensors")
def shape_negative(folder: Path) -> None:
    _st(folder, {"w": _entry(shape=(-8, -4))}, bytes(128))


@case("safetensors", "model.safetensors")
def shape_float(folder: Path) -> None:
    _st(folder, {"w": _entry(shape=(8.0, 4))}, bytes(128))


@case("safetensors", "model.safetensors")
def shape_bool(folder: Path) -> None:
    _st(folder, {"w": _entry(shape=(True, 4))}, bytes(128))


@case("safetensors", "model.safetensors")
def shape_not_a_list(folder: Path) -> None:
    _st(folder, {"w": _entry(shape="8x4")}, bytes(128))


@case("safetensors", "model.safetensors")
def shape_product_10_pow_400(folder: Path) -> None:
    _st(folder, {"w": _entry(shape=[10**200, 10**200])}, bytes(128))


@case("safetensors", "model.safetensors")
def shape_product_2_pow_128(folder: Path) -> None:
    _st(folder, {"w": _entry(shape=[2**64, 2**64], offsets=(0, 128))}, bytes(128))


@case("safetensors", exit_codes=(0, 1))
def shape_10k_dimensions(folder: Path) -> None:
    _st(folder, {"w": _entry(shape=[1] * 10_000 + [32], offsets=(0, 128))}, bytes(128))


@case("safetensors", "model.safetensors")
def shape_20k_dimensions_of_4000_digits(folder: Path) -> None:
    _st(folder, b'{"w": {"dtype": "F32", "shape": [' + b",".join([b"9" * 4000] * 20_000)
        + b'], "data_offsets": [0, 128]}}', bytes(128))


@case("safetensors", "model.safetensors")
def integer_over_4300_digits(folder: Path) -> None:
    _st(folder, b'{"w": {"dtype": "F32", "shape": [1' + b"0" * 5000 + b'], "data_offsets": [0, 4]}}', bytes(4))


@case("safetensors", "model.safetensors")
def tensor_name_with_newline_and_escape(folder: Path) -> None:
    _st(folder, {"a\nb\x1b[31m": _entry(offsets=(0, 128)), "c\r": _entry(offsets=(64, 192))}, bytes(192))


@case("safetensors", "model.safetensors")
def tensor_name_10mb(folder: Path) -> None:
    _st(folder, {"x" * 10_000_000: _entry(dtype="F16")}, bytes(128))


@case("safetensors", exit_codes=(0, 1))
def tensor_name_lone_surrogate(folder: Path) -> None:
    header, data = embedding_header()
    header["\ud800.weight"] = header.pop("lm_head.weight")
    _st(folder, json.dumps(header).encode(), data)


@case("safetensors", "model.safetensors")
def dtype_size_disagrees_with_offsets(folder: Path) -> None:
    _st(folder, {"w": _entry(dtype="F16", shape=(8, 4), offsets=(0, 128))}, bytes(128))


@case("safetensors", "model.safetensors")
def offsets_overlap(folder: Path) -> None:
    _st(folder, {"a": _entry(offsets=(0, 128)), "b": _entry(offsets=(64, 192))}, bytes(192))


@case("safetensors", "model.safetensors")
def offsets_past_end(folder: Path) -> None:
    _st(folder, {"w": _entry(offsets=(1000, 1128))}, bytes(128))


@case("safetensors", "model.safetensors")
def offsets_decreasing(folder: Path) -> None:
    _st(folder, {"w": _entry(offsets=(128, 0))}, bytes(128))


@case("safetensors", "model.safetensors")
def offsets_negative(folder: Path) -> None:
    _st(folder, {"w": _entry(offsets=(-128, 0))}, bytes(128))


@case("safetensors", "model.safetensors")
def offsets_2_pow_100(folder: Path) -> None:
    _st(folder, {"w": _entry(offsets=(2**100, 2**100 + 128))}, bytes(128))


@case("safetensors", "model.safetensors")
def offsets_three_numbers(folder: Path) -> None:
    _st(folder, {"w": _entry(offsets=[0, 64, 128])}, bytes(128))


@case("safetensors", "model.safetensors")
def metadata_not_strings(folder: Path) -> None:
    header, data = embedding_header()
    header["__metadata__"] = {"format": 1}
    _st(folder, header, data)


@case("safetensors", "model.safetensors")
def metadata_a_list(folder: Path) -> None:
    header, data = embedding_header()
    header["__metadata__"] = ["pt"]
    _st(folder, header, data)


@case("safetensors", exit_codes=(0, 1))
def header_empty_object(folder: Path) -> None:
    _st(folder, b"{}")


@case("safetensors", exit_codes=(0, 1))
def header_100k_tensors(folder: Path) -> None:
    header = {f"layer.{i}.w": _entry("U8", (1,), (i, i + 1)) for i in range(100_000)}
    _st(folder, header, bytes(100_000))


@case("safetensors", exit_codes=(0, 1))
def data_section_1gb_sparse(folder: Path) -> None:
    header, data = embedding_header()
    raw = json.dumps(header).encode()
    sparse_file(folder / "model.safetensors", 2**30, struct.pack("<Q", len(raw)) + raw + data)


@case("safetensors", "model.safetensors")
def weights_file_is_a_folder(folder: Path) -> None:
    (folder / "model.safetensors").unlink()
    (folder / "model.safetensors").mkdir()


@case("safetensors", "model.safetensors")
def weights_file_is_a_fifo(folder: Path) -> None:
    (folder / "model.safetensors").unlink()
    os.mkfifo(folder / "model.safetensors")


# --- sharded index -------------------------------------------------------------------------------


def _sharded(folder: Path, weight_map: Any, shards: dict[str, dict[str, Any]] | None = None) -> None:
    (folder / "model.safetensors").unlink()
    for name, header in (shards or {}).items():
        size = max((e["data_offsets"][1] for e in header.values()), default=0)
        (folder / name).write_bytes(safetensors_bytes(header, bytes(size)))
    write_json(folder / "model.safetensors.index.json", {"metadata": {}, "weight_map": weight_map})


EMB = {"model.embed_tokens.weight": _entry()}
HEAD = {"lm_head.weight": _entry()}
SHARD1, SHARD2 = "model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"


@case("index", "model.safetensors.index.json")
def index_names_missing_shard(folder: Path) -> None:
    _sharded(folder, {"model.embed_tokens.weight": "model-00001-of-00002.safetensors"}, {})


@case("index", "model-0000")
def tensor_in_two_shards(folder: Path) -> None:
    _sharded(
        folder,
        {"model.embed_tokens.weight": SHARD1, "lm_head.weight": SHARD2},
        {SHARD1: EMB, SHARD2: EMB | HEAD},
    )


@case("index", "model.safetensors.index.json")
def index_maps_tensor_to_wrong_shard(folder: Path) -> None:
    _sharded(
        folder,
        {"model.embed_tokens.weight": SHARD2, "lm_head.weight": SHARD2},
        {SHARD1: EMB, SHARD2: HEAD},
    )


@case("index", "model.safetensors.index.json")
def index_shard_path_escapes_folder(folder: Path) -> None:
    _sharded(folder, {"model.embed_tokens.weight": "../../etc/passwd"})


@case("index", "model.safetensors.index.json")
def index_shard_absolute_path(folder: Path) -> None:
    _sharded(folder, {"model.embed_tokens.weight": "/etc/passwd"})


@case("index", "model.safetensors.index.json")
def index_weight_map_a_list(folder: Path) -> None:
    _sharded(folder, ["model.safetensors"])


@case("index", "model.safetensors.index.json")
def index_weight_map_values_not_strings(folder: Path) -> None:
    _sharded(folder, {"model.embed_tokens.weight": 1})


@case("index", "model.safetensors.index.json")
def index_invalid_json(folder: Path) -> None:
    (folder / "model.safetensors.index.json").write_text("{", encoding="utf-8")


@case("index", "model.safetensors.index.json", exit_codes=(0, 1))
def index_weight_map_empty(folder: Path) -> None:
    _sharded(folder, {})


@case("index", "model.safetensors.index.json")
def index_many_bad_shard_names(folder: Path) -> None:
    _sharded(folder, {f"t{i}": f"../shard-{i}.safetensors" for i in range(50)})


# --- config.json ---------------------------------------------------------------------------------


def _config(folder: Path, **changes: Any) -> None:
    write_json(folder / "config.json", CONFIG | changes)


@case("config", "config.json")
def vocab_size_a_string(folder: Path) -> None:
    _config(folder, vocab_size="32000")


@case("config", "config.json")
def vocab_size_negative(folder: Path) -> None:
    _config(folder, vocab_size=-32000)


@case("config", "config.json")
def vocab_size_zero(folder: Path) -> None:
    _config(folder, vocab_size=0)


@case("config", "config.json")
def vocab_size_float(folder: Path) -> None:
    _config(folder, vocab_size=8.5)


@case("config", "config.json")
def vocab_size_bool(folder: Path) -> None:
    _config(folder, vocab_size=True)


@case("config", "config.json")
def vocab_size_a_list(folder: Path) -> None:
    _config(folder, vocab_size=[8])


@case("config", exit_codes=(0, 1))
def vocab_size_null(folder: Path) -> None:
    _config(folder, vocab_size=None)


@case("config", exit_codes=(0, 1))
def vocab_size_10_pow_30(folder: Path) -> None:
    _config(folder, vocab_size=10**30)


@case("config", "config.json")
def vocab_size_10_pow_5000_digits(folder: Path) -> None:
    (folder / "config.json").write_text('{"model_type": "llama", "vocab_size": 1' + "0" * 5000 + "}")


@case("config", "config.json")
def vocab_size_infinity(folder: Path) -> None:
    (folder / "config.json").write_text('{"model_type": "llama", "vocab_size": Infinity}')


@case("config", "config.json")
def max_position_embeddings_a_string(folder: Path) -> None:
    _config(folder, max_position_embeddings="2048")


@case("config", "config.json")
def eos_token_id_a_string(folder: Path) -> None:
    _config(folder, eos_token_id="2")


@case("config", "config.json")
def eos_token_id_nested_list(folder: Path) -> None:
    _config(folder, eos_token_id=[[2]])


@case("config", "config.json")
def eos_token_id_list_with_null(folder: Path) -> None:
    _config(folder, eos_token_id=[2, None])


@case("config", exit_codes=(0, 1))
def eos_token_id_huge(folder: Path) -> None:
    _config(folder, eos_token_id=2**70)


@case("config", "config.json")
def tie_word_embeddings_a_string(folder: Path) -> None:
    _config(folder, tie_word_embeddings="false")


@case("config", "config.json")
def model_type_a_number(folder: Path) -> None:
    _config(folder, model_type=7)


@case("config", "config.json")
def architectures_a_string(folder: Path) -> None:
    _config(folder, architectures="LlamaForCausalLM")


@case("config", "config.json")
def text_config_a_string(folder: Path) -> None:
    _config(folder, text_config="llama")


@case("config", "config.json")
def text_config_vocab_size_a_string(folder: Path) -> None:
    _config(folder, text_config={"model_type": "llama", "vocab_size": "8"})


@case("config", "config.json")
def id2label_a_list(folder: Path) -> None:
    _config(folder, id2label=["neg", "pos"])


@case("config", "config.json")
def id2label_key_not_an_integer(folder: Path) -> None:
    _config(folder, id2label={"zero": "neg"})


@case("config", "config.json")
def label2id_value_an_object(folder: Path) -> None:
    _config(folder, label2id={"neg": {"id": 0}})


@case("config", "config.json")
def label2id_key_with_newline(folder: Path) -> None:
    _config(folder, label2id={"neg\nINJECTED LINE": "x"})


@case("config", "config.json")
def num_labels_zero(folder: Path) -> None:
    _config(folder, num_labels=0)


@case("config", "config.json")
def config_a_list(folder: Path) -> None:
    write_json(folder / "config.json", [CONFIG])


@case("config", "config.json")
def config_a_string(folder: Path) -> None:
    write_json(folder / "config.json", "config")


@case("config", "config.json")
def config_invalid_json(folder: Path) -> None:
    (folder / "config.json").write_text('{"vocab_size": 8,,}', encoding="utf-8")


@case("config", "config.json")
def config_invalid_utf8(folder: Path) -> None:
    (folder / "config.json").write_bytes(b'{"model_type": "\xc3\x28"}')


@case("config", "config.json")
def config_utf16_bom(folder: Path) -> None:
    (folder / "config.json").write_bytes(json.dumps(CONFIG).encode("utf-16"))


@case("config", "config.json")
def config_empty(folder: Path) -> None:
    (folder / "config.json").write_bytes(b"")


@case("config", "config.json")
def config_1gb_sparse(folder: Path) -> None:
    sparse_file(folder / "config.json", 2**30, b'{"vocab_size": 8, "x": "')


@case("config", "config.json")
def config_nested_1m_deep(folder: Path) -> None:
    (folder / "config.json").write_bytes(b"[" * 1_000_000 + b"]" * 1_000_000)


@case("config", "config.json")
def config_nested_objects_100k_deep(folder: Path) -> None:
    (folder / "config.json").write_bytes(b'{"a":' * 100_000 + b"1" + b"}" * 100_000)


@case("config", "config.json")
def config_a_folder(folder: Path) -> None:
    (folder / "config.json").unlink()
    (folder / "config.json").mkdir()


@case("config", "config.json")
def config_a_fifo(folder: Path) -> None:
    (folder / "config.json").unlink()
    os.mkfifo(folder / "config.json")


@case("config", "generation_config.json")
def generation_config_invalid_json(folder: Path) -> None:
    (folder / "generation_config.json").write_text("nope", encoding="utf-8")


@case("config", "generation_config.json")
def generation_config_eos_a_string(folder: Path) -> None:
    write_json(folder / "generation_config.json", {"eos_token_id": "</s>"})


@case("config", exit_codes=(0, 1))
def auto_map_custom_code(folder: Path) -> None:
    _config(folder, auto_map={"AutoModelForCausalLM": "modeling_evil.EvilForCausalLM"})
    (folder / "modeling_evil.py").write_text("import os\nos.system('touch PWNED')\n")


# --- tokenizer -----------------------------------------------------------------------------------


@case("tokenizer", "tokenizer.json")
def tokenizer_json_not_a_tokenizer(folder: Path) -> None:
    write_json(folder / "tokenizer.json", {"hello": "world"})


@case("tokenizer", "tokenizer.json")
def tokenizer_json_a_list(folder: Path) -> None:
    write_json(folder / "tokenizer.json", [1, 2, 3])


@case("tokenizer", "tokenizer.json")
def tokenizer_json_invalid_utf8(folder: Path) -> None:
    (folder / "tokenizer.json").write_bytes(b'{"version": "\xff"}')


@case("tokenizer", "tokenizer.json")
def tokenizer_json_unknown_model_type(folder: Path) -> None:
    data = tokenizer_json()
    data["model"]["type"] = "Evil"
    write_json(folder / "tokenizer.json", data)


@case("tokenizer", "tokenizer.json")
def tokenizer_json_vocab_ids_negative(folder: Path) -> None:
    data = tokenizer_json()
    data["model"]["vocab"]["a"] = -1
    write_json(folder / "tokenizer.json", data)


@case("tokenizer", "tokenizer.json", exit_codes=(0, 1, 2))
def tokenizer_json_vocab_id_2_pow_31(folder: Path) -> None:
    data = tokenizer_json()
    data["model"]["vocab"]["a"] = 2**31
    write_json(folder / "tokenizer.json", data)


@case("tokenizer", "tokenizer.json")
def tokenizer_json_nested_100k_deep(folder: Path) -> None:
    (folder / "tokenizer.json").write_bytes(b"[" * 100_000 + b"]" * 100_000)


@case("tokenizer", "tokenizer.json")
def tokenizer_json_1gb_sparse(folder: Path) -> None:
    sparse_file(folder / "tokenizer.json", 2**30, b"{")


@case("tokenizer", "tokenizer_config.json")
def tokenizer_config_a_list(folder: Path) -> None:
    write_json(folder / "tokenizer_config.json", [])


@case("tokenizer", "tokenizer_config.json")
def added_tokens_decoder_a_list(folder: Path) -> None:
    write_json(folder / "tokenizer_config.json", TOKENIZER_CONFIG | {"added_tokens_decoder": ["<x>"]})


@case("tokenizer", "tokenizer_config.json")
def added_tokens_decoder_id_2_pow_64(folder: Path) -> None:
    write_json(folder / "tokenizer_config.json",
               TOKENIZER_CONFIG | {"added_tokens_decoder": {str(2**64): {"content": "<x>", "special": True}}})


@case("tokenizer", "tokenizer_config.json")
def added_tokens_decoder_id_negative(folder: Path) -> None:
    write_json(folder / "tokenizer_config.json",
               TOKENIZER_CONFIG | {"added_tokens_decoder": {"-5": {"content": "<x>", "special": True}}})


@case("tokenizer", "tokenizer_config.json")
def added_tokens_decoder_key_not_a_number(folder: Path) -> None:
    write_json(folder / "tokenizer_config.json",
               TOKENIZER_CONFIG | {"added_tokens_decoder": {"x": {"content": "<x>"}}})


@case("tokenizer", exit_codes=(0, 1, 2))
def special_token_lone_surrogate(folder: Path) -> None:
    (folder / "tokenizer_config.json").write_text(
        json.dumps(TOKENIZER_CONFIG | {"eos_token": "\ud800", "extra_special_tokens": ["\udfff<x>"]}))


@case("tokenizer", exit_codes=(0, 1))
def special_token_with_escape_sequences(folder: Path) -> None:
    write_json(folder / "tokenizer_config.json", TOKENIZER_CONFIG | {"pad_token": "\x1b]0;owned\x07\n<pad>"})


@case("tokenizer", "tokenizer_config.json")
def model_max_length_a_string(folder: Path) -> None:
    write_json(folder / "tokenizer_config.json", TOKENIZER_CONFIG | {"model_max_length": "512"})


@case("tokenizer", exit_codes=(0, 1))
def special_token_an_object_without_content(folder: Path) -> None:
    write_json(folder / "tokenizer_config.json", TOKENIZER_CONFIG | {"eos_token": {"id": 2}})


@case("tokenizer", exit_codes=(0, 1))
def chat_template_a_number(folder: Path) -> None:
    write_json(folder / "tokenizer_config.json", TOKENIZER_CONFIG | {"chat_template": 7})


@case("tokenizer", exit_codes=(0, 1))
def chat_template_list_of_junk(folder: Path) -> None:
    write_json(folder / "tokenizer_config.json", TOKENIZER_CONFIG | {"chat_template": [1, {"name": 2}, None]})


@case("tokenizer", exit_codes=(0, 1))
def chat_template_with_jinja_payload(folder: Path) -> None:
    (folder / "chat_template.jinja").write_text(
        "{{ cycler.__init__.__globals__.os.system('touch PWNED') }}<|im_start|>", encoding="utf-8"
    )


@case("tokenizer", "chat_template.jinja")
def chat_template_invalid_utf8(folder: Path) -> None:
    (folder / "chat_template.jinja").write_bytes(b"\xff\xfe{{ x }}")


@case("tokenizer", exit_codes=(0, 1))
def tokenizer_auto_map_custom_class(folder: Path) -> None:
    write_json(folder / "tokenizer_config.json",
               TOKENIZER_CONFIG | {"tokenizer_class": "EvilTokenizer",
                                   "auto_map": {"AutoTokenizer": ["tokenization_evil.EvilTokenizer", None]}})
    (folder / "tokenization_evil.py").write_text("import os\nos.system('touch PWNED')\n")


@case("tokenizer", exit_codes=(0, 1, 2))
def slow_tokenizer_auto_map_custom_class(folder: Path) -> None:
    (folder / "tokenizer.json").unlink()
    (folder / "vocab.txt").write_text("\n".join(VOCAB) + "\n", encoding="utf-8")
    write_json(folder / "tokenizer_config.json",
               TOKENIZER_CONFIG | {"tokenizer_class": "EvilTokenizer",
                                   "auto_map": {"AutoTokenizer": ["tokenization_evil.EvilTokenizer", None]}})
    (folder / "tokenization_evil.py").write_text("import os\nos.system('touch PWNED')\n")


@case("tokenizer", "vocab.txt")
def slow_tokenizer_vocab_a_fifo(folder: Path) -> None:
    (folder / "tokenizer.json").unlink()
    os.mkfifo(folder / "vocab.txt")
    write_json(folder / "tokenizer_config.json", TOKENIZER_CONFIG | {"tokenizer_class": "BertTokenizer"})


@case("links", "vocab.txt")
def slow_tokenizer_vocab_symlink_outside(folder: Path) -> None:
    (folder / "tokenizer.json").unlink()
    _outside(folder, "vocab.txt", "\n".join(VOCAB) + "\n")
    write_json(folder / "tokenizer_config.json", TOKENIZER_CONFIG | {"tokenizer_class": "BertTokenizer"})


# --- the tokenizers library: panics and aborts (issue 11, class 1) ---------------------------------


def _tokenizer_with(folder: Path, **changes: Any) -> None:
    write_json(folder / "tokenizer.json", tokenizer_json() | changes)


def _charsmap(blob: bytes) -> dict[str, Any]:
    import base64

    return {"type": "Precompiled", "precompiled_charsmap": base64.b64encode(blob).decode()}


TEMPLATE_WITH_MARKER = TOKENIZER_CONFIG | {"chat_template": "<|im_start|>{{ m }}<|im_end|>"}


@case("tokenizer library", exit_codes=(0, 1))
def padding_fixed_2_pow_31(folder: Path) -> None:
    """Fixed padding is honoured by every encode: 2^31 ids (an abort) unless stripped first."""
    _tokenizer_with(folder, padding={"strategy": {"Fixed": 2**31}, "direction": "Right", "pad_to_multiple_of": None,
                                     "pad_id": 3, "pad_type_id": 0, "pad_token": "<pad>"})
    write_json(folder / "tokenizer_config.json", TEMPLATE_WITH_MARKER)


@case("tokenizer library", exit_codes=(0, 1))
def padding_to_multiple_of_2_pow_31(folder: Path) -> None:
    _tokenizer_with(folder, padding={"strategy": "BatchLongest", "direction": "Right", "pad_to_multiple_of": 2**31,
                                     "pad_id": 3, "pad_type_id": 0, "pad_token": "<pad>"})
    write_json(folder / "tokenizer_config.json", TEMPLATE_WITH_MARKER)


@case("tokenizer library", exit_codes=(0, 1))
def truncation_stride_over_max_length(folder: Path) -> None:
    """A stride >= max_length panics on any text longer than max_length."""
    _tokenizer_with(folder, truncation={"direction": "Right", "max_length": 1, "strategy": "LongestFirst",
                                        "stride": 10})
    write_json(folder / "tokenizer_config.json", TEMPLATE_WITH_MARKER)


@case("tokenizer library", "tokenizer.json")
def precompiled_charsmap_trie_size_4gib(folder: Path) -> None:
    """The library allocates the declared trie size before checking it: 2^32 bytes aborts the process."""
    _tokenizer_with(folder, normalizer=_charsmap(b"\xfc\xff\xff\xff" + b"abcd"))


@case("tokenizer library", "tokenizer.json")
def precompiled_charsmap_in_a_sequence(folder: Path) -> None:
    _tokenizer_with(folder, normalizer={"type": "Sequence", "normalizers": [
        {"type": "NFKC"}, _charsmap(b"\x00\x00\x00\x40" + bytes(16))]})


@case("tokenizer library", "tokenizer.json")
def precompiled_charsmap_not_base64(folder: Path) -> None:
    _tokenizer_with(folder, normalizer={"type": "Precompiled", "precompiled_charsmap": "!!not base64!!"})


@case("tokenizer library", "tokenizer.json")
def pre_tokenizer_catastrophic_regex(folder: Path) -> None:
    """Oniguruma's retry limit panics inside encode: the chat-template markers reach it."""
    _tokenizer_with(folder, pre_tokenizer={"type": "Split", "pattern": {"Regex": "(a|a?)+$"},
                                           "behavior": "Isolated", "invert": False})
    write_json(folder / "tokenizer_config.json",
               TOKENIZER_CONFIG | {"chat_template": "<|" + "a" * 40 + "b|>{{ m }}"})


@case("tokenizer library", "tokenizer.json")
def normalizer_catastrophic_regex(folder: Path) -> None:
    _tokenizer_with(folder, normalizer={"type": "Replace", "pattern": {"Regex": "(a|a?)+$"}, "content": "x"})
    write_json(folder / "tokenizer_config.json",
               TOKENIZER_CONFIG | {"chat_template": "<|" + "a" * 40 + "b|>{{ m }}"})


@case("tokenizer library", "tokenizer.json")
def pre_tokenizer_invalid_regex(folder: Path) -> None:
    _tokenizer_with(folder, pre_tokenizer={"type": "Split", "pattern": {"Regex": "(((("},
                                           "behavior": "Isolated", "invert": False})


# --- unbounded work (issue 11, class 2): every stage linear in its input --------------------------


@case("unbounded work", exit_codes=(0, 1))
def added_tokens_decoder_40k_new_tokens(folder: Path) -> None:
    """40,000 declared tokens the tokenizer lacks: added one by one this took minutes."""
    decoder = {str(8 + i): {"content": f"<t{i}>", "special": i % 2 == 0} for i in range(40_000)}
    write_json(folder / "tokenizer_config.json", TOKENIZER_CONFIG | {"added_tokens_decoder": decoder})


@case("unbounded work", exit_codes=(0, 1))
def extra_special_tokens_40k(folder: Path) -> None:
    write_json(folder / "tokenizer_config.json",
               TOKENIZER_CONFIG | {"extra_special_tokens": [f"<x{i}>" for i in range(40_000)]})


@case("unbounded work", exit_codes=(0, 1))
def chat_template_500k_distinct_markers(folder: Path) -> None:
    """500,000 findings rendered one by one: capped per rule, the rest counted."""
    write_json(folder / "tokenizer_config.json",
               TOKENIZER_CONFIG | {"chat_template": "".join(f"<|m{i}|>" for i in range(500_000))})


@case("unbounded work", exit_codes=(0, 1))
def weights_40k_added_tokens_2mb_template(folder: Path) -> list[str]:
    """--weights looks up every added token in the chat template: one scan each took minutes."""
    decoder = {str(8 + i): {"content": f"<t{i}>", "special": True} for i in range(40_000)}
    write_json(folder / "tokenizer_config.json",
               TOKENIZER_CONFIG | {"added_tokens_decoder": decoder, "chat_template": "<t7>" + "x" * 2_000_000})
    return [str(folder), "--weights"]


@case("unbounded work", exit_codes=(0, 1))
def tokenizer_json_100k_added_tokens(folder: Path) -> None:
    data = tokenizer_json()
    data["added_tokens"] += [{"id": 8 + i, "content": f"<a{i}>", "single_word": False, "lstrip": False,
                              "rstrip": False, "normalized": False, "special": True} for i in range(100_000)]
    write_json(folder / "tokenizer.json", data)


# --- links and non-regular files at any depth (issue 11, class 3) ---------------------------------


@case("links at depth", "additional_chat_templates")
def additional_chat_template_symlink_outside(folder: Path) -> None:
    """transformers reads every file of additional_chat_templates/ through links."""
    (folder / "additional_chat_templates").mkdir()
    target = folder.parent / "outside-secret.jinja"
    target.write_text("{{ secret }}", encoding="utf-8")
    (folder / "additional_chat_templates" / "tool_use.jinja").symlink_to(target)


@case("links at depth", "deep")
def fifo_three_folders_down(folder: Path) -> None:
    (folder / "a" / "b" / "deep").mkdir(parents=True)
    os.mkfifo(folder / "a" / "b" / "deep" / "tokenizer.model")


@case("links at depth", "evil")
def folder_symlink_outside(folder: Path) -> None:
    (folder.parent / "outside-dir").mkdir()
    (folder / "evil").symlink_to(folder.parent / "outside-dir")


@case("links at depth", exit_codes=(0, 1))
def folder_symlink_loops_inside(folder: Path) -> None:
    """Three links back to the folder: 3^depth paths for anything that follows them; never descended."""
    for name in ("x", "y", "z"):
        (folder / name).symlink_to(".")


@case("links at depth", "adapter_model.bin")
def adapter_weights_a_fifo(folder: Path) -> list[str]:
    """A LoRA adapter folder next to its base: torch.load on a FIFO would block forever."""
    adapter = folder.parent / "adapter"
    adapter.mkdir()
    write_json(adapter / "adapter_config.json", {"base_model_name_or_path": str(folder), "peft_type": "LORA",
                                                 "r": 4, "target_modules": ["q_proj"]})
    os.mkfifo(adapter / "adapter_model.bin")
    return [str(adapter)]


@case("links at depth", "hf-vocab-audit.toml")
def settings_symlink_outside(folder: Path) -> None:
    """The checkpoint's own settings file is read (it may make the gate stricter); a link outside is refused."""
    _outside(folder, "hf-vocab-audit.toml", 'fail-on = "never"\n')


@case("links at depth", "hf-vocab-audit.toml")
def settings_a_fifo(folder: Path) -> None:
    os.mkfifo(folder / "hf-vocab-audit.toml")


def _needs_growth(folder: Path) -> None:
    """Two added tokens past the 8 embedding rows: --fix has something to grow (and to copy)."""
    data = tokenizer_json()
    data["added_tokens"] += [{"id": 8 + i, "content": f"<new{i}>", "single_word": False, "lstrip": False,
                              "rstrip": False, "normalized": False, "special": True} for i in range(2)]
    write_json(folder / "tokenizer.json", data)


@case("links at depth", "notes.txt")
def fix_copies_symlink_outside(folder: Path) -> list[str]:
    _needs_growth(folder)
    (folder / "docs").mkdir()
    target = folder.parent / "outside-notes.txt"
    target.write_text("secret", encoding="utf-8")
    (folder / "docs" / "notes.txt").symlink_to(target)
    return [str(folder), "--fix", "--output", str(folder.parent / "out"), "--verify-load", "never"]


@case("links at depth", "zero")
def fix_copies_dev_zero(folder: Path) -> list[str]:
    _needs_growth(folder)
    (folder / "extra").mkdir()
    (folder / "extra" / "zero").symlink_to("/dev/zero")
    return [str(folder), "--fix", "--output", str(folder.parent / "out"), "--verify-load", "never"]


# --- hostile dataset folders (issue 11, class 4) and over-long rows (class 1) -----------------------


def _data(folder: Path) -> Path:
    data = folder.parent / "data"
    data.mkdir(exist_ok=True)
    return data


def _jsonl(path: Path, rows: list[dict[str, Any]]) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


@case("dataset folder", "state.json")
def dataset_state_json_a_fifo(folder: Path) -> list[str]:
    data = _data(folder)
    os.mkfifo(data / "state.json")
    return [str(folder), "--dataset", str(data)]


@case("dataset folder", "train.parquet")
def dataset_glob_matches_a_fifo(folder: Path) -> list[str]:
    data = _data(folder)
    os.mkfifo(data / "train.parquet")
    return [str(folder), "--dataset", str(data / "*.parquet")]


@case("dataset folder", "train.jsonl")
def dataset_file_is_a_fifo(folder: Path) -> list[str]:
    data = _data(folder)
    os.mkfifo(data / "train.jsonl")
    return [str(folder), "--dataset", str(data / "train.jsonl")]


@case("dataset folder", exit_codes=(0, 1))
def dataset_glob_through_self_links(folder: Path) -> list[str]:
    """Three links back to the folder: a recursive glob that follows them visits 3^depth paths."""
    data = _data(folder)
    _jsonl(data / "train.jsonl", [{"input_ids": [1, 4, 5]}])
    for name in ("x", "y", "z"):
        (data / name).symlink_to(".")
    return [str(folder), "--dataset", str(data / "**" / "*.jsonl")]


@case("dataset folder", "leak")
def dataset_folder_links_outside(folder: Path) -> list[str]:
    data = _data(folder)
    _jsonl(data / "train.jsonl", [{"input_ids": [1, 4, 5]}])
    _jsonl(folder.parent / "outside.jsonl", [{"input_ids": [1, 99]}])
    (data / "leak.jsonl").symlink_to(folder.parent / "outside.jsonl")
    return [str(folder), "--dataset", str(data)]


@case("dataset folder", "README.md")
def dataset_readme_configs_url(folder: Path) -> list[str]:
    """datasets follows README configs to a URL, even under HF_HUB_OFFLINE=1."""
    data = _data(folder)
    _jsonl(data / "train.jsonl", [{"input_ids": [1, 4, 5]}])
    (data / "README.md").write_text("---\nconfigs:\n- config_name: default\n  data_files:\n  - split: train\n"
                                    "    path: https://127.0.0.1:9/x.jsonl\n---\n", encoding="utf-8")
    return [str(folder), "--dataset", str(data)]


@case("dataset folder", "README.md")
def dataset_readme_configs_leave_folder(folder: Path) -> list[str]:
    """Rows of a file outside the folder would be audited instead of the folder's own."""
    data = _data(folder)
    _jsonl(data / "train.jsonl", [{"input_ids": [1, 4, 5]}])
    _jsonl(folder.parent / "other.jsonl", [{"input_ids": [1, 4]}])
    (data / "README.md").write_text("---\nconfigs:\n- config_name: default\n  data_files: ../other.jsonl\n---\n",
                                    encoding="utf-8")
    return [str(folder), "--dataset", str(data)]


@case("dataset folder", "dataset_dict.json")
def dataset_dict_split_named_dotdot(folder: Path) -> list[str]:
    """A split named '..' would read the parent folder's state.json and Arrow files."""
    data = _data(folder)
    write_json(data / "dataset_dict.json", {"splits": [".."]})
    return [str(folder), "--dataset", str(data)]


@case("dataset folder", "data-00000-of-00001.arrow")
def dataset_arrow_offsets_past_buffer(folder: Path) -> list[str]:
    """A save_to_disk Arrow stream whose list offsets point past the values buffer (foreign memory)."""
    import pyarrow as pa

    data = _data(folder)
    good = pa.array([[1, 2], [3]], type=pa.list_(pa.int64()))
    arrow = data / "data-00000-of-00001.arrow"
    with pa.OSFile(str(arrow), "wb") as sink:
        with pa.ipc.new_stream(sink, pa.schema([("input_ids", good.type)])) as writer:
            writer.write_batch(pa.record_batch([good], names=["input_ids"]))
    raw = arrow.read_bytes()
    offsets = struct.pack("<3i", 0, 2, 3)
    assert raw.count(offsets) == 1
    arrow.write_bytes(raw.replace(offsets, struct.pack("<3i", 0, 2, 1_000_000)))  # past the 3 values
    write_json(data / "state.json", {"_data_files": [{"filename": "data-00000-of-00001.arrow"}], "_split": "train"})
    return [str(folder), "--dataset", str(data)]


@case("dataset folder", "rows.arrow")
def dataset_arrow_file_offsets_past_buffer(folder: Path) -> list[str]:
    """The same damage in a `.arrow` data file given directly (read by datasets' own Arrow builder)."""
    args = dataset_arrow_offsets_past_buffer(folder)
    data = Path(args[-1])
    (data / "data-00000-of-00001.arrow").rename(data / "rows.arrow")
    (data / "state.json").unlink()
    return [str(folder), "--dataset", str(data / "rows.arrow")]


@case("dataset folder", exit_codes=(1,))
def dataset_text_row_32mb_without_spaces(folder: Path) -> list[str]:
    """One 32 MB word: the library asks for gigabytes (an abort); the row is reported (HVA532), not tokenized."""
    data = _data(folder)
    _jsonl(data / "train.jsonl", [{"text": "a b"}, {"text": "x" * 32_000_000}])
    (folder / "hf-vocab-audit.toml").write_text('fail-on = "warning"\n', encoding="utf-8")
    return [str(folder), "--dataset", str(data / "train.jsonl")]


@case("dataset folder", "train.jsonl")
def dataset_jsonl_300mb_without_a_line_end(folder: Path) -> list[str]:
    """300 MB (sparse) with no b"\\n": one "row" the JSON Lines reader used to read whole into memory."""
    data = _data(folder)
    with open(data / "train.jsonl", "wb") as fh:
        fh.write(b'{"text": "')
        fh.truncate(300 * 1024 * 1024)
    return [str(folder), "--dataset", str(data / "train.jsonl")]


# --- unbounded writes (issue 11, class 5) ----------------------------------------------------------


def _added_token_at(folder: Path, token_id: int) -> None:
    data = tokenizer_json()
    data["model"]["vocab"]["far"] = token_id  # a vocabulary id; added_tokens ids are renumbered by the library
    write_json(folder / "tokenizer.json", data)


@case("writes and downloads", "allow-large-growth")
def fix_token_id_20_million(folder: Path) -> list[str]:
    """One token id of 20 million: --fix would write 1.3 GB of new rows."""
    _added_token_at(folder, 20_000_000)
    return [str(folder), "--fix", "--output", str(folder.parent / "out"), "--verify-load", "never"]


@case("writes and downloads", "allow-large-growth")
def fix_token_id_2_pow_31(folder: Path) -> list[str]:
    _added_token_at(folder, 2**31)
    return [str(folder), "--fix", "--output", str(folder.parent / "out"), "--verify-load", "never"]


# --- report injection (issue 11, class 7): audited, and the JSON must be strict --------------------


@case("report injection", exit_codes=(0, 1))
def weights_nan_and_infinity_rows(folder: Path) -> list[str]:
    """--weights statistics over NaN and infinite rows: JSON has no NaN (they must be null)."""
    import numpy as np

    header, _ = embedding_header()
    rows = np.zeros((len(VOCAB), HIDDEN), dtype=np.float32)
    rows[4] = np.nan
    rows[5] = np.inf
    rows[6] = 1.0
    _st(folder, header, rows.tobytes() * 2)
    return [str(folder), "--weights"]


@case("safetensors", exit_codes=(0, 1))
def weights_lm_head_shorter_than_the_embedding(folder: Path) -> list[str]:
    """--weights when an untied lm_head has fewer rows than the embedding (HVA102's case): the untrained
    rows past the lm_head's end were looked up in it (IndexError, a traceback)."""
    rows = len(VOCAB)
    size, short = rows * HIDDEN * 4, (rows - 2) * HIDDEN * 4
    header = {
        "model.embed_tokens.weight": {"dtype": "F32", "shape": [rows, HIDDEN], "data_offsets": [0, size]},
        "lm_head.weight": {"dtype": "F32", "shape": [rows - 2, HIDDEN], "data_offsets": [size, size + short]},
    }
    _st(folder, header, bytes(size + short))  # every row zero: untrained on both sides
    return [str(folder), "--weights"]


@case("report injection", exit_codes=(0, 1))
def token_strings_with_workflow_commands(folder: Path) -> None:
    """Token strings that would be GitHub Actions commands, terminal escapes and XML-illegal bytes."""
    evil = "\n::stop-commands::pwn\n::error title=x::owned\x1b[2J\x00\ufffe\u202e"
    write_json(folder / "tokenizer_config.json", TOKENIZER_CONFIG | {
        "pad_token": "</s>", "extra_special_tokens": [evil], "chat_template": "<|" + "x" * 3 + "|>" + evil})


@case("report injection", exit_codes=(0, 1))
def tensor_name_with_controls_audited(folder: Path) -> None:
    header, data = embedding_header()
    header["\x1b]0;title\x07::error::x\u2028$\\frac{a}{$"] = _entry("U8", (4,), (len(data), len(data) + 4))
    _st(folder, header, data + bytes(4))


@case("report injection", exit_codes=(0, 1))
def allowlist_reason_with_workflow_commands(folder: Path) -> None:
    """An allowlist reason is printed by the github format: it must not start a line with '::'."""
    _needs_growth(folder)  # HVA101 fires, and the entry accepts it
    (folder / "hf-vocab-audit.toml").write_text(
        '[[allow]]\ncode = "HVA101"\nreason = "ok\\n::stop-commands::pwn\\n::error::owned"\n', encoding="utf-8")


# --- the Hub (issue 11, classes 5 and 6): a remote index and declared sizes are checked first -----


def _remote_index(folder: Path, shard: str) -> None:
    (folder / "model.safetensors").unlink()
    write_json(folder / "model.safetensors.index.json", {"metadata": {}, "weight_map": {"lm_head.weight": shard}})


@case("hub", "model.safetensors.index.json", hub=True)
def hub_index_shard_parent_path(folder: Path) -> None:
    """A request for ../../../../x.safetensors would go elsewhere on the endpoint, with HF_TOKEN."""
    _remote_index(folder, "../../../../x.safetensors")


@case("hub", "model.safetensors.index.json", hub=True)
def hub_index_shard_absolute_path(folder: Path) -> None:
    _remote_index(folder, "/api/x.safetensors")


@case("hub", "model.safetensors.index.json", hub=True)
def hub_index_shard_in_a_folder(folder: Path) -> None:
    _remote_index(folder, "sub/x.safetensors")


@case("hub", "config.json", hub=True)
def hub_config_declared_17_mib(folder: Path) -> None:
    """Over the 16 MiB limit: refused from the declared size, before a byte of the body is sent."""
    (folder / "config.json").write_bytes(json.dumps(CONFIG).encode()[:-1] + b" " * (17 * 2**20) + b"}")


@case("hub", "tokenizer_config.json", hub=True)
def hub_file_longer_than_declared(folder: Path) -> None:
    """HEAD declares 100 bytes, GET streams 20 MiB: the body is cut off at the 16 MiB limit as it streams."""
    (folder / "tokenizer_config.json").write_bytes(b"{" + b" " * (20 * 2**20) + b"}")
    HUB_DECLARED["org/hub_file_longer_than_declared"] = {"tokenizer_config.json": 100}


# --- pickle weights ------------------------------------------------------------------------------


@case("pickle", exit_codes=(1,))  # HVA001: weights_only refuses it ("Unsupported operand")
def bin_garbage(folder: Path) -> None:
    (folder / "model.safetensors").unlink()
    (folder / "pytorch_model.bin").write_bytes(b"\x80\x02garbage" * 10)


@case("pickle", "pytorch_model.bin")
def bin_empty(folder: Path) -> None:
    (folder / "model.safetensors").unlink()
    (folder / "pytorch_model.bin").write_bytes(b"")


@case("pickle", "pytorch_model.bin")
def bin_1gb_sparse(folder: Path) -> None:
    (folder / "model.safetensors").unlink()
    sparse_file(folder / "pytorch_model.bin", 2**30, b"PK\x03\x04")


@case("pickle", exit_codes=(1,))
def bin_pickle_runs_code(folder: Path) -> None:
    (folder / "model.safetensors").unlink()
    (folder / "pytorch_model.bin").write_bytes(code_running_pickle(folder / "PWNED"))


@case("pickle", "pytorch_model.bin.index.json")
def bin_index_names_missing_file(folder: Path) -> None:
    (folder / "model.safetensors").unlink()
    write_json(folder / "pytorch_model.bin.index.json", {"weight_map": {"w": "pytorch_model-00001-of-00002.bin"}})


def code_running_pickle(marker: Path) -> bytes:
    """A protocol-2 pickle whose ``__reduce__`` creates ``marker`` (``open(marker, 'w')``) when unpickled."""
    import pickle

    class Payload:
        def __reduce__(self):
            return (open, (str(marker), "w"))

    return pickle.dumps({"model.embed_tokens.weight": Payload()}, protocol=2)


# --- folders and links ---------------------------------------------------------------------------


@case("folder")
def empty_folder(folder: Path) -> list[str]:
    empty = folder / "empty"
    empty.mkdir()
    return [str(empty)]


@case("folder")
def model_dir_is_a_file(folder: Path) -> list[str]:
    return [str(folder / "config.json")]


@case("folder")
def model_dir_missing(folder: Path) -> list[str]:
    return [str(folder / "nope")]


@case("folder", "tokenizer")
def tokenizer_dir_is_a_file(folder: Path) -> list[str]:
    return [str(folder), "--tokenizer", str(folder / "tokenizer.json")]


@case("folder", "tok")
def tokenizer_dir_without_tokenizer(folder: Path) -> list[str]:
    (folder / "tok").mkdir()
    return [str(folder), "--tokenizer", str(folder / "tok")]


@case("folder")
def model_dir_name_with_newline(folder: Path) -> list[str]:
    odd = folder / "a\nb"
    odd.mkdir()
    return [str(odd)]


@case("links", "config.json")
def config_symlink_outside(folder: Path) -> None:
    _outside(folder, "config.json", json.dumps(CONFIG))


@case("links", "generation_config.json")
def generation_config_symlink_outside(folder: Path) -> None:
    _outside(folder, "generation_config.json", json.dumps({"eos_token_id": 2}))


@case("links", "model.safetensors")
def safetensors_symlink_outside(folder: Path) -> None:
    _outside(folder, "model.safetensors", (folder / "model.safetensors").read_bytes())


@case("links", "tokenizer.json")
def tokenizer_symlink_outside(folder: Path) -> None:
    _outside(folder, "tokenizer.json", (folder / "tokenizer.json").read_text())


@case("links", "tokenizer_config.json")
def tokenizer_config_symlink_outside(folder: Path) -> None:
    _outside(folder, "tokenizer_config.json", json.dumps(TOKENIZER_CONFIG))


@case("links", "chat_template.jinja")
def chat_template_symlink_outside(folder: Path) -> None:
    _outside(folder, "chat_template.jinja", "{{ x }}")


@case("links", "model.safetensors")
def safetensors_symlink_to_dev_zero(folder: Path) -> None:
    (folder / "model.safetensors").unlink()
    (folder / "model.safetensors").symlink_to("/dev/zero")


@case("links", "config.json")
def config_symlink_loop(folder: Path) -> None:
    (folder / "config.json").unlink()
    (folder / "config.json").symlink_to(folder / "config.json")


@case("links", "config.json")
def config_dangling_symlink(folder: Path) -> None:
    (folder / "config.json").unlink()
    (folder / "config.json").symlink_to(folder / "missing.json")


@case("links", exit_codes=(0, 1))
def hub_cache_layout_links_to_blobs(folder: Path) -> list[str]:
    """``models--X/snapshots/REV/*`` linking into ``models--X/blobs``: the Hugging Face cache, accepted."""
    repo = folder.parent / "models--org--tiny"
    snapshot, blobs = repo / "snapshots" / "abc123", repo / "blobs"
    snapshot.mkdir(parents=True)
    blobs.mkdir()
    for i, f in enumerate(sorted(p for p in folder.iterdir() if p.is_file())):
        (blobs / f"blob{i}").write_bytes(f.read_bytes())
        (snapshot / f.name).symlink_to(Path("../../blobs") / f"blob{i}")
    return [str(snapshot)]


def _outside(folder: Path, name: str, content: str | bytes) -> None:
    target = folder.parent / f"outside-{name}"
    if isinstance(content, bytes):
        target.write_bytes(content)
    else:
        target.write_text(content, encoding="utf-8")
    (folder / name).unlink(missing_ok=True)
    (folder / name).symlink_to(target)


# --- issue 24, item 3: stand-ins for weights and tokenizer files ----------------------------------


def lfs_pointer(real_size: int = 16_777_216) -> bytes:
    """What a checkout without Git LFS leaves in place of a stored file (about 130 bytes)."""
    return (b"version https://git-lfs.github.com/spec/v1\n"
            b"oid sha256:4d7a214614ab2935c943f9e0ff69d22eadbb8f32b1258daaa5e2ca24d17e2393\n"
            + f"size {real_size}\n".encode())


@case("stand-ins", "model.safetensors", says="git lfs pull")
def safetensors_lfs_pointer(folder: Path) -> None:
    (folder / "model.safetensors").write_bytes(lfs_pointer())


@case("stand-ins", "model.safetensors", says="download it again")
def safetensors_html_error_page(folder: Path) -> None:
    (folder / "model.safetensors").write_bytes(b"<!DOCTYPE html>\n<html><head><title>502 Bad Gateway</title>"
                                               b"</head><body>Bad Gateway</body></html>\n" * 20)


@case("stand-ins", "model.safetensors", says="text file")
def safetensors_a_text_file(folder: Path) -> None:
    (folder / "model.safetensors").write_text("this is not a model, see README\n", encoding="utf-8")


@case("stand-ins", "model-00002-of-00002.safetensors", says="git lfs pull")
def shard_lfs_pointer(folder: Path) -> None:
    header, data = embedding_header()
    _sharded(folder, {"model.embed_tokens.weight": "model-00001-of-00002.safetensors",
                      "lm_head.weight": "model-00002-of-00002.safetensors"},
             {"model-00001-of-00002.safetensors": {"model.embed_tokens.weight": header["model.embed_tokens.weight"]}})
    (folder / "model-00002-of-00002.safetensors").write_bytes(lfs_pointer())


@case("stand-ins", "model.safetensors.index.json", says="git lfs pull")
def index_lfs_pointer(folder: Path) -> None:
    (folder / "model.safetensors").unlink()
    (folder / "model.safetensors.index.json").write_bytes(lfs_pointer(4096))


@case("stand-ins", "pytorch_model.bin", says="git lfs pull")
def bin_lfs_pointer(folder: Path) -> None:
    (folder / "model.safetensors").unlink()
    (folder / "pytorch_model.bin").write_bytes(lfs_pointer())


@case("stand-ins", "tokenizer.json", says="git lfs pull")
def tokenizer_json_lfs_pointer(folder: Path) -> None:
    (folder / "tokenizer.json").write_bytes(lfs_pointer(9_085_657))


@case("stand-ins", "tokenizer.model", says="git lfs pull")
def tokenizer_model_lfs_pointer(folder: Path) -> None:
    (folder / "tokenizer.json").unlink()
    write_json(folder / "tokenizer_config.json", {**TOKENIZER_CONFIG, "tokenizer_class": "LlamaTokenizer"})
    (folder / "tokenizer.model").write_bytes(lfs_pointer(499_723))


# --- issue 24, class 2: outputs never go through a link, never into an input ---------------------


def _victim(folder: Path) -> Path:
    """A folder next to the checkpoint with a file of its own, which no output may touch."""
    victim = folder.parent / "victim"
    victim.mkdir()
    (victim / "keep.txt").write_text("precious", encoding="utf-8")
    return victim


@case("output links (class 2)", "ckpt-fixed")
def fix_force_planted_fixed_link(folder: Path) -> list[str]:
    _needs_growth(folder)
    (folder.parent / "ckpt-fixed").symlink_to(_victim(folder), target_is_directory=True)
    return [str(folder), "--fix", "--force", "--verify-load", "never"]


@case("output links (class 2)", "out")
def fix_output_a_link_to_a_folder(folder: Path) -> list[str]:
    _needs_growth(folder)
    (folder.parent / "out").symlink_to(_victim(folder), target_is_directory=True)
    return [str(folder), "--fix", "--force", "--output", str(folder.parent / "out"), "--verify-load", "never"]


@case("output links (class 2)", "hf-vocab-audit.sarif")
def output_file_a_link_to_the_config(folder: Path) -> list[str]:
    (folder.parent / "hf-vocab-audit.sarif").symlink_to(folder / "config.json")
    return [str(folder), "--format", "sarif", "--output-file", str(folder.parent / "hf-vocab-audit.sarif")]


@case("output links (class 2)", "report.md")
def output_file_a_dangling_link(folder: Path) -> list[str]:
    (folder.parent / "report.md").symlink_to(folder.parent / "victim" / "new.md")
    return [str(folder), "--format", "markdown", "--output-file", str(folder.parent / "report.md")]


@case("output links (class 2)", "config.json")
def output_file_inside_the_model(folder: Path) -> list[str]:
    return [str(folder), "--format", "sarif", "--output-file", str(folder / "config.json")]


@case("output links (class 2)", "audit.sarif")
def output_file_through_a_folder_link_into_the_model(folder: Path) -> list[str]:
    (folder.parent / "sub").symlink_to(folder, target_is_directory=True)
    return [str(folder), "--format", "sarif", "--output-file", str(folder.parent / "sub" / "audit.sarif")]


# --- issue 24, class 1: the slow-tokenizer path, bounded before transformers sees a file ------------


def _pb(number: int, payload: bytes | int) -> bytes:
    """One protobuf field: a varint (int) or length-delimited bytes."""
    def varint(n: int) -> bytes:
        out = bytearray()
        while True:
            out.append((n & 0x7F) | (0x80 if n > 0x7F else 0))
            n >>= 7
            if not n:
                return bytes(out)
    if isinstance(payload, int):
        return varint(number << 3) + varint(payload)
    return varint(number << 3 | 2) + varint(len(payload)) + payload


def sentencepiece_model(pieces: list[str], charsmap: bytes | None = None) -> bytes:
    """A SentencePiece ModelProto by hand: pieces (score 0; <unk> UNKNOWN, <s> </s> <pad> CONTROL), an optional
    normalizer charsmap."""
    kinds = {"<unk>": 2, "<s>": 3, "</s>": 3, "<pad>": 3}  # UNKNOWN, CONTROL; NORMAL (1) is the default
    body = b"".join(_pb(1, _pb(1, p.encode()) + b"\x15" + struct.pack("<f", 0.0)
                        + (_pb(3, kinds[p]) if p in kinds else b"")) for p in pieces)
    if charsmap is not None:
        body += _pb(3, _pb(1, b"nmt_nfkc") + _pb(2, charsmap))
    return body


def _slow_only(folder: Path, tokenizer_class: str = "T5Tokenizer") -> None:
    (folder / "tokenizer.json").unlink()
    write_json(folder / "tokenizer_config.json", {**TOKENIZER_CONFIG, "tokenizer_class": tokenizer_class})


@case("slow tokenizer (class 1)", "spiece.model")
def spiece_model_charsmap_trie_4gib(folder: Path) -> None:
    _slow_only(folder)
    (folder / "spiece.model").write_bytes(sentencepiece_model(VOCAB, struct.pack("<I", 2**32 - 4) + bytes(64)))


@case("slow tokenizer (class 1)", "spiece.model")
def spiece_model_piece_500k_characters(folder: Path) -> None:
    _slow_only(folder)
    (folder / "spiece.model").write_bytes(sentencepiece_model([*VOCAB, "x" * 500_000]))


@case("slow tokenizer (class 1)", "spiece.model")
def spiece_model_2gib_sparse(folder: Path) -> None:
    _slow_only(folder)
    sparse_file(folder / "spiece.model", 2 * 2**30, sentencepiece_model(VOCAB))


@case("slow tokenizer (class 1)", "vocab.txt")
def vocab_txt_over_a_million_lines(folder: Path) -> None:
    _slow_only(folder, "BertTokenizer")
    (folder / "vocab.txt").write_bytes(b"\n".join(t.encode() for t in VOCAB) + b"\nx" * 1_100_000)


@case("slow tokenizer (class 1)", "vocab.txt")
def vocab_txt_1gib_sparse(folder: Path) -> None:
    _slow_only(folder, "BertTokenizer")
    sparse_file(folder / "vocab.txt", 2**30, b"\n".join(t.encode() for t in VOCAB) + b"\n")


@case("slow tokenizer (class 1)", "tokenizer_config.json")
def tokenizer_class_a_model_class(folder: Path) -> None:
    _slow_only(folder, "LlamaForCausalLM")
    _config(folder, hidden_size=65536, intermediate_size=2**20, num_hidden_layers=1000, num_attention_heads=64)
    (folder / "vocab.txt").write_text("\n".join(VOCAB) + "\n", encoding="utf-8")


@case("slow tokenizer (class 1)", "config.json")
def config_tokenizer_class_a_model_class(folder: Path) -> None:
    _slow_only(folder, "BertTokenizer")
    cfg = json.loads((folder / "tokenizer_config.json").read_text(encoding="utf-8"))
    del cfg["tokenizer_class"]
    write_json(folder / "tokenizer_config.json", cfg)
    _config(folder, tokenizer_class="LlamaModel", hidden_size=65536, num_hidden_layers=1000)
    (folder / "vocab.txt").write_text("\n".join(VOCAB) + "\n", encoding="utf-8")


# --- issue 24, class 4: datasets that expand ------------------------------------------------------


@case("expanding datasets (class 4)", "train.jsonl.gz")
def dataset_gzip_member_with_a_300mb_line(folder: Path) -> list[str]:
    """A 300 KB gzip member that decompresses to one 300 MB line (the plain-.jsonl bound did not cover it)."""
    import gzip

    data = _data(folder)
    chunk = b"a" * 2**20
    with gzip.open(data / "train.jsonl.gz", "wb", compresslevel=1) as fh:
        fh.write(b'{"text": "')
        for _ in range(300):
            fh.write(chunk)
        fh.write(b'"}\n')
    return [str(folder), "--dataset", str(data / "train.jsonl.gz")]


@case("expanding datasets (class 4)", "train.json")
def dataset_json_nested_500k_deep(folder: Path) -> list[str]:
    """A row nested 500,000 deep: pyarrow's JSON reader recursed into it until SIGSEGV."""
    data = _data(folder)
    (data / "train.json").write_bytes(b'{"text": "a b"}\n{"text": "c", "x": ' + b"[" * 500_000 + b"]" * 500_000
                                      + b"}\n")
    return [str(folder), "--dataset", str(data / "train.json")]


@case("expanding datasets (class 4)", "train.jsonl")
def dataset_jsonl_nested_500k_deep_hidden_by_closers(folder: Path) -> list[str]:
    """The same depth after a line of 600,000 closing brackets (a net count would call it level 0)."""
    data = _data(folder)
    (data / "train.jsonl").write_bytes(b'{"text": "a b"}\n' + b"]" * 600_000 + b"\n"
                                       + b'{"x": ' + b"[" * 500_000 + b"]" * 500_000 + b"}\n")
    return [str(folder), "--dataset", str(data / "train.jsonl")]


@case("expanding datasets (class 4)", "rows.arrow")
def dataset_arrow_dictionary_expands(folder: Path) -> list[str]:
    """An 8 MB Arrow file: one 8 MB dictionary value that 1,000 rows point at (8 GB once decoded)."""
    import pyarrow as pa

    data = _data(folder)
    text = pa.DictionaryArray.from_arrays(pa.array([0] * 1000, pa.int32()), pa.array(["a " * 4_000_000]))
    with pa.OSFile(str(data / "rows.arrow"), "wb") as sink:
        with pa.ipc.new_stream(sink, pa.schema([("text", text.type)])) as writer:
            writer.write_batch(pa.record_batch([text], names=["text"]))
    return [str(folder), "--dataset", str(data / "rows.arrow")]


@case("expanding datasets (class 4)", "train.csv")
def dataset_csv_300k_columns(folder: Path) -> list[str]:
    data = _data(folder)
    header = ",".join(["text", *(f"c{i}" for i in range(300_000))])
    (data / "train.csv").write_text(header + "\n" + "a b" + "," * 300_000 + "\n", encoding="utf-8")
    return [str(folder), "--dataset", str(data / "train.csv")]


@case("expanding datasets (class 4)", exit_codes=(1,))
def dataset_label_30_million(folder: Path) -> list[str]:
    """A label of 30,000,000 for a 2-class model: out of range (HVA510), and the holes rule (HVA513) must not
    allocate by that value."""
    _config(folder, architectures=["LlamaForSequenceClassification"], num_labels=2,
            id2label={"0": "neg", "1": "pos"}, label2id={"neg": 0, "pos": 1})
    data = _data(folder)
    _jsonl(data / "train.jsonl", [{"text": "a b", "label": 0}, {"text": "c d", "label": 30_000_000}])
    return [str(folder), "--dataset", str(data / "train.jsonl")]


# --- issue 24, class 5: unbounded reads elsewhere -------------------------------------------------


@case("unbounded reads (class 5)", "hf-vocab-audit.toml")
def settings_file_4gib_sparse(folder: Path) -> None:
    sparse_file(folder / "hf-vocab-audit.toml", 4 * 2**30, b'fail-on = "warning"\n')


@case("unbounded reads (class 5)", exit_codes=(0, 1), hub=True)
def hub_server_ignores_range(folder: Path) -> None:
    """The Hub answers the header's Range request with the whole 16 MiB file (200): read up to the header."""
    header, data = embedding_header()
    (folder / "model.safetensors").write_bytes(safetensors_bytes(header, data) + bytes(16 * 2**20))
    HUB_IGNORES_RANGE["org/hub_server_ignores_range"] = frozenset({"model.safetensors"})


@case("unbounded reads (class 5)", "processor_config.json")
def processor_config_lone_surrogate(folder: Path) -> None:
    (folder / "processor_config.json").write_text('{"image_token": "\\ud800"}', encoding="utf-8")


# --- issue 24, class 3: repro's evidence is untrusted input ----------------------------------------


def _evidence(folder: Path, length: int = 4) -> Path:
    """A batch the guard would save (batch-*.safetensors of input_ids) and its sidecar, next to the checkpoint."""
    evidence = folder.parent / "evidence"
    evidence.mkdir()
    batch = evidence / "batch-rank0-workermain-000001-HVA901.safetensors"
    ids = struct.pack(f"<{length}q", *([4, 5, 6, 7] * (length // 4 + 1))[:length])
    batch.write_bytes(safetensors_bytes({"__metadata__": {"format": "pt"},
                                         "input_ids": {"dtype": "I64", "shape": [1, length],
                                                       "data_offsets": [0, len(ids)]}}, ids))
    write_json(batch.with_suffix(".json"), {"format": "hf-vocab-audit-batch", "version": 1, "config": CONFIG})
    return batch


@case("repro evidence (class 3)", "batch-rank0-workermain-000001-HVA901.json")
def repro_sidecar_links_outside(folder: Path) -> list[str]:
    batch = _evidence(folder)
    secret = folder.parent / "secret.json"
    write_json(secret, {"format": "hf-vocab-audit-batch", "config": {"token": "hf_secret"}})
    batch.with_suffix(".json").unlink()
    batch.with_suffix(".json").symlink_to(secret)
    return ["repro", str(batch), str(folder)]


@case("repro evidence (class 3)", "batch-rank0-workermain-000001-HVA901.json")
def repro_sidecar_4gib_sparse(folder: Path) -> list[str]:
    batch = _evidence(folder)
    sparse_file(batch.with_suffix(".json"), 4 * 2**30, b'{"format": "hf-vocab-audit-batch", "x": "')
    return ["repro", str(batch), str(folder)]


@case("repro evidence (class 3)", "batch-rank0-workermain-000001-HVA901.safetensors")
def repro_batch_links_outside(folder: Path) -> list[str]:
    batch = _evidence(folder)
    outside = folder.parent / "outside.safetensors"
    batch.rename(outside)
    batch.symlink_to(outside)
    return ["repro", str(batch), str(folder)]


@case("repro evidence (class 3)", "config.json")
def repro_model_config_1gib_sparse(folder: Path) -> list[str]:
    batch = _evidence(folder)
    sparse_file(folder / "config.json", 2**30, b'{"model_type": "llama", "x": "')
    return ["repro", str(batch), str(folder)]


@case("repro evidence (class 3)", exit_codes=(0, 1))
def repro_batch_400k_tokens(folder: Path) -> list[str]:
    """400,000 positions for a 64-position model: checked whole, replayed on its first 65 positions."""
    _config(folder, num_attention_heads=2, num_key_value_heads=2, num_hidden_layers=1, intermediate_size=8)
    return ["repro", str(_evidence(folder, 400_000)), str(folder)]


# --- GGUF files (issue 23): every count checked against the bytes left before anything is read -----

GGUF_TOKENS = [b"<unk>", b"<s>", b"</s>", b"a", b"b", b"c", b"d", b"e"]


def _gs(raw: bytes) -> bytes:
    return struct.pack("<Q", len(raw)) + raw


def _gkv(key: str, vtype: int, payload: bytes) -> bytes:
    return _gs(key.encode()) + struct.pack("<I", vtype) + payload


def _gtokens(tokens: list[bytes] = GGUF_TOKENS, count: int | None = None) -> bytes:
    body = b"".join(_gs(t) for t in tokens)
    return _gkv("tokenizer.ggml.tokens", 9, struct.pack("<IQ", 8, len(tokens) if count is None else count) + body)


def _gtensor(name: str = "token_embd.weight", dims: tuple[int, ...] = (HIDDEN, len(GGUF_TOKENS)),
             gtype: int = 0, offset: int = 0) -> bytes:
    return _gs(name.encode()) + struct.pack("<I", len(dims)) + b"".join(struct.pack("<Q", d) for d in dims) \
        + struct.pack("<IQ", gtype, offset)


def gguf_bytes(kvs: list[bytes] | None = None, tensors: list[bytes] | None = None, *, data: bytes | None = None,
               n_kv: int | None = None, n_tensors: int | None = None, version: int = 3, magic: bytes = b"GGUF",
               pad: bool = True) -> bytes:
    """A GGUF file from raw parts: magic, version, counts (overridable: a lying count), key/values, tensor
    infos, padding to 32 bytes, data (default: one F32 token_embd of 8 x HIDDEN zeros)."""
    kvs = [_gkv("general.architecture", 8, _gs(b"llama")), _gkv("tokenizer.ggml.model", 8, _gs(b"llama")),
           _gtokens()] if kvs is None else kvs
    tensors = [_gtensor()] if tensors is None else tensors
    head = magic + struct.pack("<IQQ", version, len(tensors) if n_tensors is None else n_tensors,
                               len(kvs) if n_kv is None else n_kv) + b"".join(kvs) + b"".join(tensors)
    head += bytes(-len(head) % 32) if pad else b""
    return head + (bytes(len(GGUF_TOKENS) * HIDDEN * 4) if data is None else data)


def _gguf(folder: Path, raw: bytes, name: str = "model.gguf") -> list[str]:
    (folder / name).write_bytes(raw)
    return [str(folder / name)]


@case("gguf", exit_codes=(0,))
def gguf_healthy(folder: Path) -> list[str]:
    return _gguf(folder, gguf_bytes())


@case("gguf", "model.gguf")
def gguf_shorter_than_header(folder: Path) -> list[str]:
    return _gguf(folder, b"GGUF\x03\x00\x00")


@case("gguf", "model.gguf")
def gguf_bad_magic(folder: Path) -> list[str]:
    return _gguf(folder, gguf_bytes(magic=b"GGML"))


@case("gguf", "model.gguf")
def gguf_version_1(folder: Path) -> list[str]:
    return _gguf(folder, gguf_bytes(version=1))


@case("gguf", "model.gguf")
def gguf_big_endian(folder: Path) -> list[str]:
    return _gguf(folder, gguf_bytes(version=3 << 24))


@case("gguf", "model.gguf")
def gguf_kv_count_2_pow_60(folder: Path) -> list[str]:
    return _gguf(folder, gguf_bytes(n_kv=2**60))


@case("gguf", "model.gguf")
def gguf_kv_count_lies_by_one(folder: Path) -> list[str]:
    return _gguf(folder, gguf_bytes(n_kv=4, tensors=[], data=b"", pad=False))


@case("gguf", "model.gguf")
def gguf_tensor_count_2_pow_63(folder: Path) -> list[str]:
    return _gguf(folder, gguf_bytes(n_tensors=2**63))


@case("gguf", "model.gguf")
def gguf_key_length_2_pow_62(folder: Path) -> list[str]:
    return _gguf(folder, gguf_bytes(kvs=[struct.pack("<Q", 2**62) + b"k" * 64]))


@case("gguf", "model.gguf")
def gguf_string_of_1gb_in_a_sparse_file(folder: Path) -> list[str]:
    """A chat template declared 1 GiB long, and the file really is that long (a hole)."""
    head = b"GGUF" + struct.pack("<IQQ", 3, 0, 1) + _gs(b"tokenizer.chat_template") + struct.pack("<IQ", 8, 2**30)
    sparse_file(folder / "model.gguf", len(head) + 2**30, head)
    return [str(folder / "model.gguf")]


@case("gguf", "model.gguf")
def gguf_array_length_2_pow_60(folder: Path) -> list[str]:
    return _gguf(folder, gguf_bytes(kvs=[_gtokens(count=2**60)]))


@case("gguf", "model.gguf")
def gguf_array_lies_by_one(folder: Path) -> list[str]:
    return _gguf(folder, gguf_bytes(kvs=[_gtokens(count=len(GGUF_TOKENS) + 1)], tensors=[], data=b"", pad=False))


@case("gguf", "model.gguf")
def gguf_nested_array(folder: Path) -> list[str]:
    return _gguf(folder, gguf_bytes(kvs=[_gkv("x", 9, struct.pack("<IQ", 9, 1) + struct.pack("<IQ", 4, 0))]))


@case("gguf", "model.gguf")
def gguf_unknown_value_type(folder: Path) -> list[str]:
    return _gguf(folder, gguf_bytes(kvs=[_gkv("x", 77, b"\x00" * 8)]))


@case("gguf", "model.gguf")
def gguf_duplicate_key(folder: Path) -> list[str]:
    return _gguf(folder, gguf_bytes(kvs=[_gtokens(), _gtokens()]))


@case("gguf", "model.gguf")
def gguf_tokens_not_strings(folder: Path) -> list[str]:
    return _gguf(folder, gguf_bytes(kvs=[_gkv("tokenizer.ggml.tokens", 9, struct.pack("<IQ", 4, 2) + bytes(8))]))


@case("gguf", "model.gguf")
def gguf_bos_id_a_string(folder: Path) -> list[str]:
    return _gguf(folder, gguf_bytes(kvs=[_gtokens(), _gkv("tokenizer.ggml.bos_token_id", 8, _gs(b"1"))]))


@case("gguf", "model.gguf")
def gguf_alignment_zero(folder: Path) -> list[str]:
    return _gguf(folder, gguf_bytes(kvs=[_gtokens(), _gkv("general.alignment", 4, struct.pack("<I", 0))]))


@case("gguf", "model.gguf")
def gguf_tensor_offset_past_end(folder: Path) -> list[str]:
    return _gguf(folder, gguf_bytes(tensors=[_gtensor(offset=2**40)]))


@case("gguf", "model.gguf")
def gguf_tensor_offset_2_pow_64_minus_32(folder: Path) -> list[str]:
    return _gguf(folder, gguf_bytes(tensors=[_gtensor(offset=2**64 - 32)]))


@case("gguf", "model.gguf")
def gguf_tensor_offset_not_aligned(folder: Path) -> list[str]:
    return _gguf(folder, gguf_bytes(tensors=[_gtensor(offset=4)]))


@case("gguf", "model.gguf")
def gguf_tensor_dims_product_2_pow_128(folder: Path) -> list[str]:
    return _gguf(folder, gguf_bytes(tensors=[_gtensor(dims=(2**64 - 1, 2**64 - 1))]))


@case("gguf", "model.gguf")
def gguf_tensor_5_dims(folder: Path) -> list[str]:
    return _gguf(folder, gguf_bytes(tensors=[_gtensor(dims=(1, 1, 1, 1, 1))]))


@case("gguf", "model.gguf")
def gguf_tensor_unknown_ggml_type(folder: Path) -> list[str]:
    return _gguf(folder, gguf_bytes(tensors=[_gtensor(gtype=255)]))


@case("gguf", "model.gguf")
def gguf_duplicate_tensor(folder: Path) -> list[str]:
    return _gguf(folder, gguf_bytes(tensors=[_gtensor(), _gtensor()], data=bytes(2 * 8 * HIDDEN * 4)))


@case("gguf", "model.gguf")
def gguf_truncated_data(folder: Path) -> list[str]:
    return _gguf(folder, gguf_bytes()[:-16])


@case("gguf", "model-00001-of-00002.gguf")
def gguf_shard_missing_part(folder: Path) -> list[str]:
    kvs = [_gtokens(), _gkv("split.count", 2, struct.pack("<H", 2))]
    return _gguf(folder, gguf_bytes(kvs=kvs), "model-00001-of-00002.gguf")


@case("gguf", "model.gguf")
def gguf_is_a_fifo(folder: Path) -> list[str]:
    os.mkfifo(folder / "model.gguf")
    return [str(folder / "model.gguf")]


@case("gguf", exit_codes=(0, 1))
def gguf_data_1gb_sparse(folder: Path) -> list[str]:
    """A valid header over a 1 GiB data section that is a hole: only the header is read."""
    raw = gguf_bytes(tensors=[_gtensor(dims=(HIDDEN, 2**26))], data=b"")
    sparse_file(folder / "model.gguf", len(raw) + HIDDEN * 2**26 * 4, raw)
    return [str(folder / "model.gguf")]


@case("gguf", exit_codes=(0, 1))
def gguf_token_invalid_utf8_and_control_chars(folder: Path) -> list[str]:
    return _gguf(folder, gguf_bytes(kvs=[_gtokens([b"\xff\xfe", b"\x1b[31m", b"\n"] + GGUF_TOKENS[3:])]))


@case("gguf", exit_codes=(1,))
def gguf_eos_id_u32_max(folder: Path) -> list[str]:
    return _gguf(folder, gguf_bytes(kvs=[_gtokens(), _gkv("tokenizer.ggml.eos_token_id", 4, struct.pack("<I", 2**32 - 1))]))


@case("gguf", exit_codes=(0, 1))
def gguf_200k_metadata_keys(folder: Path) -> list[str]:
    kvs = [_gtokens()] + [_gkv(f"k{i}", 4, struct.pack("<I", i)) for i in range(200_000)]
    return _gguf(folder, gguf_bytes(kvs=kvs))


# --- running the CLI on a case -------------------------------------------------------------------

MEMORY_LIMIT = 3 * 2**30  # address space (RLIMIT_AS); importing torch alone maps ~1 GiB
TIME_LIMIT = 60.0  # seconds, wall clock, on a loaded 2-core machine: what benchmarks/robustness.py holds each case to
# The tests' cap is generous: hostile work is bounded by counts and bytes inside the tool, and a case that
# takes 25 s alone (50 rows of nested template loops spending their render budget) must not turn the suite
# red on a machine that is busy with other jobs. Speed is the benchmark's to measure, against TIME_LIMIT.
TEST_TIME_CAP = 4 * TIME_LIMIT


@dataclass(frozen=True)
class Outcome:
    exit_code: int  # negative: killed by that signal; 124: over the time limit
    stdout: str
    stderr: str
    seconds: float
    max_rss_mb: float


def run_cli(args: list[str], *, env: dict[str, str] | None = None, timeout: float = TIME_LIMIT,
            memory: int = MEMORY_LIMIT, cwd: Path | None = None) -> Outcome:
    """``python -m hf_vocab_audit check ARGS`` in a child with an address-space limit and a timeout."""
    import resource
    import subprocess
    import sys
    import threading
    import time

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))

    root = Path(__file__).resolve().parent.parent
    child_env = dict(os.environ if env is None else env)
    child_env["PYTHONPATH"] = str(root) + os.pathsep + child_env.get("PYTHONPATH", "")
    child_env.setdefault("HF_HUB_OFFLINE", "1")
    start = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-m", "hf_vocab_audit", *command(args)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=child_env, cwd=cwd, preexec_fn=limit,
    )
    chunks: dict[str, bytes] = {}
    readers = [
        threading.Thread(target=lambda k=k, s=s: chunks.__setitem__(k, s.read()), daemon=True)
        for k, s in (("out", proc.stdout), ("err", proc.stderr))
    ]
    for r in readers:
        r.start()
    timer = threading.Timer(timeout, proc.kill)
    timer.start()
    _, status, usage = os.wait4(proc.pid, 0)  # rusage of this child alone
    timed_out = not timer.is_alive()
    timer.cancel()
    proc.returncode = os.waitstatus_to_exitcode(status)
    for r in readers:
        r.join()
    proc.stdout.close()  # type: ignore[union-attr]
    proc.stderr.close()  # type: ignore[union-attr]
    return Outcome(
        124 if timed_out else proc.returncode,
        chunks.get("out", b"").decode("utf-8", "replace"),
        chunks.get("err", b"").decode("utf-8", "replace"),
        time.perf_counter() - start,
        usage.ru_maxrss / 1024,
    )


def command(args: list[str]) -> list[str]:
    """The CLI's arguments for a case: ``check ARGS``, or ARGS as they are when they name ``repro``."""
    return args if args[:1] == ["repro"] else ["check", *args]


class _CaseTimeout(BaseException):
    """Raised by SIGALRM inside a batch child; a BaseException so the CLI's ``except Exception`` misses it."""


def run_batch(items: list[tuple[str, list[str]]], *, timeout: float = TIME_LIMIT,
              memory: int = MEMORY_LIMIT, env: dict[str, str] | None = None) -> dict[str, Outcome]:
    """Many ``check`` invocations in ONE child process (limits as :func:`run_cli`), through typer's CliRunner.

    Interpreter and torch start-up are paid once per child; each case still has its own SIGALRM time limit.
    An exception that escapes the CLI is reported as exit code 99 with its traceback in ``stderr``.

    A child stops taking cases once its address space is past half the limit (thread pools, arenas and
    mappings of earlier cases are never given back to the kernel) and a fresh child takes the rest, so
    every case starts with at least half of ``memory`` free: with one child for all, the catalogue's
    later cases failed with MemoryError once it had grown past 300 cases.
    """
    import resource
    import subprocess
    import sys

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))

    root = Path(__file__).resolve().parent
    env = {**os.environ, "PYTHONPATH": f"{root.parent}{os.pathsep}{root}", "HF_HUB_OFFLINE": "1", **(env or {})}
    code = f"import malformed; malformed._batch_child({timeout!r}, {memory // 2!r})"
    results: dict[str, Outcome] = {}
    while len(results) < len(items):
        left = [item for item in items if item[0] not in results]
        done = subprocess.run(
            [sys.executable, "-c", code], input=json.dumps(left).encode(), capture_output=True, env=env,
            preexec_fn=limit, timeout=timeout * len(left) + 60, check=False,
        )
        if done.returncode != 0:
            raise RuntimeError(f"batch child failed ({done.returncode}): {done.stderr.decode()[-3000:]}")
        ran = json.loads(done.stdout)
        if not ran:
            raise RuntimeError("batch child ran no case")
        results.update((name, Outcome(**fields)) for name, fields in ran)
    return results


def _address_space() -> int:
    """This process's mapped address space in bytes (what RLIMIT_AS limits), from /proc."""
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    return 0


def _batch_child(timeout: float, stop_above: int | None = None) -> None:
    import resource
    import signal
    import sys
    import time
    import traceback

    from typer.testing import CliRunner

    from hf_vocab_audit.cli import app

    def alarm(*_: object) -> None:
        raise _CaseTimeout

    signal.signal(signal.SIGALRM, alarm)
    results = []
    for name, args in json.loads(sys.stdin.read()):
        start = time.perf_counter()
        signal.setitimer(signal.ITIMER_REAL, timeout)
        try:
            result = CliRunner().invoke(app, command(args))
            code, out, err = result.exit_code, result.stdout, result.stderr
            if result.exception is not None and not isinstance(result.exception, SystemExit):
                code = 99
                err += "".join(traceback.format_exception(result.exception))
        except _CaseTimeout:
            code, out, err = 124, "", ""
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
        rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        results.append((name, dict(exit_code=code, stdout=out, stderr=err,
                                   seconds=time.perf_counter() - start, max_rss_mb=rss)))
        if stop_above is not None and _address_space() > stop_above:
            break  # the parent starts a fresh child for the cases left (run_batch)
    sys.stdout.write(json.dumps(results))


# --- groups kept in modules of their own -----------------------------------------------------------
# A group of cases that needs builders of its own lives in tests/hostile_<group>.py and registers its
# cases with ``@case`` like the ones above; importing this module imports them all, so CASES is whole.


def _import_groups() -> None:
    import importlib

    for path in sorted(Path(__file__).resolve().parent.glob("hostile_*.py")):
        importlib.import_module(path.stem)


_import_groups()
