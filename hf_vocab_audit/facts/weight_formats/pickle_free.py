"""PyTorch ``pytorch_model.bin[.index.json]``, read through ``torch.load(mmap=True, weights_only=True)`` onto the
meta device: a pickle that would run code is refused (``CheckpointTensors.refused``), never loaded."""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

from ...errors import AuditError, first_line, import_torch
from ...io.jsonfile import check_inside
from ...io.safetensors_header import TensorInfo
from ...io.stand_in import refuse_stand_in
from ..tensors import _TORCH_TO_ST, BIN, BIN_INDEX, CheckpointTensors, RefusedFile, read_index
from . import WeightFormat


class PickleFreeBin(WeightFormat):
    name: ClassVar[str] = "bin"
    no_rows = ("weight statistics read safetensors only; {file} is a pickle checkpoint (convert it with "
               "save_pretrained(safe_serialization=True))")

    def load(self, folder: Path) -> CheckpointTensors | None:
        return load_bin(folder)


def load_bin(folder: Path) -> CheckpointTensors | None:
    if (folder / BIN_INDEX).exists():
        index_path, weight_map = read_index(folder, BIN_INDEX)
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
    return CheckpointTensors(PickleFreeBin.name, tuple(files), index_file, tensors, {}, tuple(refused))


def _refusal(exc: Exception) -> str:
    """The useful line of torch's weights-only error: which global or opcode the pickle needed."""
    import re

    text = str(exc)
    found = re.search(r"(?:Unsupported global: GLOBAL|unsupported GLOBAL) ([\w.]+)", text)
    if found:
        return f"the pickle imports {found.group(1)}, so loading it with weights_only=False would run code"
    found = re.search(r"WeightsUnpickler error: *\n?\s*([^\n]+)", text)
    return ((found.group(1).strip() if found else "") or first_line(exc))[:300]


