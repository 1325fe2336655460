"""safetensors: ``model.safetensors.index.json`` (sharded) or ``model.safetensors``, read from their headers."""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

from ...errors import AuditError
from ...io.jsonfile import check_inside
from ...io.safetensors_header import SafetensorsHeader, TensorInfo, read_header
from ..tensors import SAFETENSORS, SAFETENSORS_INDEX, CheckpointTensors, read_index
from . import WeightFormat


class Safetensors(WeightFormat):
    name: ClassVar[str] = "safetensors"
    byte_ranges = True

    def load(self, folder: Path) -> CheckpointTensors | None:
        return load_safetensors(folder)


def load_safetensors(folder: Path) -> CheckpointTensors | None:
    index_path = folder / SAFETENSORS_INDEX
    if index_path.exists():
        index_path, weight_map = read_index(folder, SAFETENSORS_INDEX)
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
    return CheckpointTensors(Safetensors.name, tuple(shards), index_file, tensors, headers)


