"""Every tensor's name, dtype and shape in a checkpoint folder, from headers only.

Order of preference: ``model.safetensors.index.json`` (sharded), ``model.safetensors``, then
``pytorch_model.bin[.index.json]`` read through ``torch.load(mmap=True, weights_only=True)``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ..errors import AuditError, first_line, import_torch
from ..io.jsonfile import check_inside, read_json_object
from ..io.safetensors_header import SafetensorsHeader, TensorInfo, read_header
from ..io.stand_in import refuse_stand_in

SAFETENSORS = "model.safetensors"
SAFETENSORS_INDEX = "model.safetensors.index.json"
BIN = "pytorch_model.bin"
BIN_INDEX = "pytorch_model.bin.index.json"


@dataclass(frozen=True)
class RefusedFile:
    """A weights file that could not be read safely (e.g. a pickle that would execute code)."""

    file: str
    reason: str


@dataclass(frozen=True)
class CheckpointTensors:
    format: str  # "safetensors" or "bin"
    files: tuple[str, ...]  # weight files relative to the folder, in shard order
    index_file: str | None
    tensors: dict[str, TensorInfo]
    headers: dict[str, SafetensorsHeader] = field(default_factory=dict)
    refused: tuple[RefusedFile, ...] = ()

    def get(self, name: str | None) -> TensorInfo | None:
        return self.tensors.get(name) if name else None


def _index(folder: Path, index_name: str) -> tuple[Path, dict[str, str]]:
    path = folder / index_name
    check_inside(path, folder)
    raw = read_json_object(path)
    weight_map = raw.get("weight_map")
    if not isinstance(weight_map, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in weight_map.items()
    ):
        raise AuditError(path, '"weight_map" must map tensor names to shard file names')
    check_shard_names(path, weight_map)
    return path, weight_map


def check_shard_names(where: str | Path, weight_map: dict[str, str]) -> None:
    """Every shard a weight map names is a plain file name (no folder, no ``..``): local and Hub indexes
    alike (a Hub shard ``../../x.safetensors`` becomes a request elsewhere on the endpoint, with HF_TOKEN)."""
    for shard in sorted(set(weight_map.values())):  # sorted: the same error whatever the hash seed
        if Path(shard).name != shard or shard in (".", "..") or "\\" in shard:
            raise AuditError(where, f"shard name {shard!r} is not a plain file name in the model folder")


def load_safetensors(folder: Path) -> CheckpointTensors | None:
    index_path = folder / SAFETENSORS_INDEX
    if index_path.exists():
        index_path, weight_map = _index(folder, SAFETENSORS_INDEX)
        shards = sorted(set(weight_map.values()))
        index_file: str | None = SAFETENSORS_INDEX
    elif (folder / SAFETENSORS).exists():
        shards, weight_map, index_file = [SAFETENSORS], {}, None
    else:
        return None
    tensors: dict[str, TensorInfo] = {}
    headers: dict[str, SafetensorsHeader] = {}
    for shard in shards:
        path = folder / shard
        if not path.exists():
            raise AuditError(index_path, f"names shard {shard!r}, which does not exist")
        check_inside(path, folder)
        header = read_header(path, shard)
        headers[shard] = header
        for info in header.tensors:
            if info.name in tensors:
                raise AuditError(path, f"tensor {info.name!r} is also in {tensors[info.name].file}")
            tensors[info.name] = info
    for name, shard in sorted(weight_map.items()):
        found = tensors.get(name)
        if found is None:
            raise AuditError(index_path, f"maps tensor {name!r} to {shard!r}, which does not contain it")
        if found.file != shard:
            raise AuditError(index_path, f"maps tensor {name!r} to {shard!r}, but it is in {found.file!r}")
    return CheckpointTensors("safetensors", tuple(shards), index_file, tensors, headers)


def load_bin(folder: Path) -> CheckpointTensors | None:
    if (folder / BIN_INDEX).exists():
        index_path, weight_map = _index(folder, BIN_INDEX)
        files, index_file = sorted(set(weight_map.values())), BIN_INDEX
    elif (folder / BIN).exists():
        files, index_file, index_path = [BIN], None, folder / BIN
    else:
        return None
    import pickle

    torch = import_torch(index_path, "reading a PyTorch .bin checkpoint")  # only for .bin checkpoints

    tensors: dict[str, TensorInfo] = {}
    refused: list[RefusedFile] = []
    for name in files:
        path = folder / name
        if not path.exists():
            raise AuditError(index_path, f"names weights file {name!r}, which does not exist")
        check_inside(path, folder)
        if not path.is_file():  # a FIFO would block torch.load forever
            raise AuditError(path, "is not a regular file")
        refuse_stand_in(path, binary=True)  # an LFS pointer is not an "unsafe pickle"
        try:
            try:
                state = torch.load(path, map_location="meta", mmap=True, weights_only=True)
            except RuntimeError as exc:
                if "mmap" not in str(exc):
                    raise
                state = torch.load(path, map_location="meta", weights_only=True)  # legacy, non-zip format
        except pickle.UnpicklingError as exc:
            refused.append(RefusedFile(name, f"torch.load(weights_only=True) refused it: {_refusal(exc)}"))
            continue
        except Exception as exc:  # noqa: BLE001 - any failure of an untrusted file is bad input
            raise AuditError(path, f"is not a readable PyTorch weights file ({exc.__class__.__name__})") from None
        if isinstance(state, dict) and "state_dict" in state and isinstance(state["state_dict"], dict):
            state = state["state_dict"]
        if not isinstance(state, dict):
            raise AuditError(path, f"holds a {type(state).__name__}, not a state dict of tensors")
        for key, value in state.items():
            if isinstance(key, str) and isinstance(value, torch.Tensor):
                dtype = str(value.dtype).removeprefix("torch.")
                tensors[key] = TensorInfo(key, _TORCH_TO_ST.get(dtype, dtype.upper()), tuple(value.shape), name)
    return CheckpointTensors("bin", tuple(files), index_file, tensors, {}, tuple(refused))


def _refusal(exc: Exception) -> str:
    """The useful line of torch's weights-only error: which global or opcode the pickle needed."""
    import re

    text = str(exc)
    found = re.search(r"(?:Unsupported global: GLOBAL|unsupported GLOBAL) ([\w.]+)", text)
    if found:
        return f"the pickle imports {found.group(1)}, so loading it with weights_only=False would run code"
    found = re.search(r"WeightsUnpickler error: *\n?\s*([^\n]+)", text)
    return ((found.group(1).strip() if found else "") or first_line(exc))[:300]


_TORCH_TO_ST = {
    "float32": "F32", "float16": "F16", "bfloat16": "BF16", "float64": "F64",
    "int64": "I64", "int32": "I32", "int16": "I16", "int8": "I8", "uint8": "U8", "bool": "BOOL",
}  # fmt: skip


def load_tensors(folder: Path) -> CheckpointTensors | None:
    """The checkpoint's tensors, or None when the folder has no weights."""
    return load_safetensors(folder) or load_bin(folder)
