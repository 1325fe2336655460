"""Where an audited checkpoint came from. A module of its own: every facts source names its origin, and
reading a folder must not wait for the findings model (and its typed fixes) to be imported."""

from __future__ import annotations

import enum


class Source(str, enum.Enum):
    """Where the audited checkpoint came from: a local folder, a Hub commit, or objects in memory."""

    FOLDER = "folder"
    HUB = "hub"
    MEMORY = "memory"
