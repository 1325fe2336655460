"""Hostile catalogue group "vision rows": a chat split with TRL's ``images`` column whose image entries point
where the scan must not read (a device, a path out of the data folder, a link out of it, a FIFO), claim a
header of 3.6 billion pixels, or number 100,000 in one row. Image headers are read only from regular files
inside the data folder; every other entry is sized by the processor's ``max_pixels`` bound, so each case is
one HVA571 finding (exit 1: the expanded image does not fit ``--max-length 8``) well inside the catalogue's
limits, and never a hang on /dev/zero or a FIFO."""

from __future__ import annotations

import json
import os
import struct
import zlib
from pathlib import Path
from typing import Any

from malformed import case, write_json

GROUP = "vision rows"
# The tiny checkpoint's word "a" is the image placeholder (named by processor_config.json).
TEMPLATE = ("{% for m in messages %}{% if m['content'] is string %}{{ m['content'] }} {% else %}"
            "{% for p in m['content'] %}{% if p['type'] == 'image' %}a {% else %}{{ p['text'] }} {% endif %}"
            "{% endfor %}{% endif %}{% endfor %}")


def _vision(folder: Path, images: list[Any]) -> list[str]:
    """A Qwen2-VL processor's files beside the tiny checkpoint, and one row carrying ``images``."""
    write_json(folder / "processor_config.json", {"processor_class": "Qwen2VLProcessor", "image_token": "a"})
    write_json(folder / "preprocessor_config.json", {"image_processor_type": "Qwen2VLImageProcessor",
                                                     "patch_size": 14, "merge_size": 2,
                                                     "size": {"shortest_edge": 3136, "longest_edge": 12544}})
    (folder / "chat_template.jinja").write_text(TEMPLATE, encoding="utf-8")
    data = folder.parent / "vision"
    data.mkdir(exist_ok=True)
    row = {"messages": [{"role": "user", "content": "b c"}, {"role": "assistant", "content": "d"}], "images": images}
    (data / "train.jsonl").write_text(json.dumps(row) + "\n", encoding="utf-8")
    return [str(folder), "--dataset", str(data / "train.jsonl"), "--max-length", "8"]


@case(GROUP, exit_codes=(1,))
def vision_image_path_is_a_device(folder: Path) -> list[str]:
    return _vision(folder, ["/dev/zero"])


@case(GROUP, exit_codes=(1,))
def vision_image_path_out_of_the_data_folder(folder: Path) -> list[str]:
    """A real image one folder up: not read (the row names it, the row is untrusted)."""
    (folder.parent / "outside.png").write_bytes(_png_header(20, 20))
    return _vision(folder, ["../outside.png"])


@case(GROUP, exit_codes=(1,))
def vision_image_link_out_of_the_data_folder(folder: Path) -> list[str]:
    args = _vision(folder, ["img.png"])
    os.symlink("/dev/zero", folder.parent / "vision" / "img.png")
    return args


@case(GROUP, exit_codes=(1,))
def vision_image_is_a_fifo(folder: Path) -> list[str]:
    args = _vision(folder, ["img.png"])
    os.mkfifo(folder.parent / "vision" / "img.png")
    return args


@case(GROUP, exit_codes=(1,))
def vision_image_header_claims_3_6_gigapixels(folder: Path) -> list[str]:
    """PIL refuses the header past its bomb limit: the size is unknown, nothing is decoded."""
    args = _vision(folder, ["img.png"])
    (folder.parent / "vision" / "img.png").write_bytes(_png_header(60000, 60000))
    return args


@case(GROUP, exit_codes=(1,))
def vision_row_with_100000_images(folder: Path) -> list[str]:
    """One image part per entry is rendered (as TRL inserts them); no more than 1,024 headers are opened."""
    return _vision(folder, ["img.png"] * 100_000)


def _png_header(width: int, height: int) -> bytes:
    """A PNG signature and IHDR chunk (no pixel data: only the header is ever read)."""
    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    chunk = b"IHDR" + ihdr
    return b"\x89PNG\r\n\x1a\n" + struct.pack(">I", len(ihdr)) + chunk + struct.pack(">I", zlib.crc32(chunk))
