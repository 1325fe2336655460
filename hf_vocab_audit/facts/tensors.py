"""Every tensor's name, dtype and shape in a checkpoint, from headers only: :class:`CheckpointTensors`, whichever
weight format (``facts.weight_formats``: safetensors, pickle-free ``.bin``, GGUF, a live model) holds them."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ..errors import AuditError
from ..io.jsonfile import check_inside, read_json_object
from ..io.safetensors_header import SafetensorsHeader, TensorInfo

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
    format: str  # the WeightFormat.name that read them (facts.weight_formats)
    files: tuple[str, ...]  # weight files relative to the folder, in shard order
    index_file: str | None
    tensors: dict[str, TensorInfo]
    headers: dict[str, SafetensorsHeader] = field(default_factory=dict)
    refused: tuple[RefusedFile, ...] = ()

    def get(self, name: str | None) -> TensorInfo | None:
        return self.tensors.get(name) if name else None


def read_index(folder: Path, index_name: str) -> tuple[Path, dict[str, str]]:
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


_TORCH_TO_ST = {
    "float32": "F32", "float16": "F16", "bfloat16": "BF16", "float64": "F64",
    "int64": "I64", "int32": "I32", "int16": "I16", "int8": "I8", "uint8": "U8", "bool": "BOOL",
}  # fmt: skip
