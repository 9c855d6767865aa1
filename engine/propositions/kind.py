"""The proposition-set file kind of ``drift validate`` (registered in :mod:`engine.formats.registry`)."""

from __future__ import annotations

from pathlib import Path

from engine.errors import FileIssue
from engine.formats.registry import FileKind, top_keys
from engine.propositions.loader import read_file


def _validate(path: Path) -> list[FileIssue]:
    return read_file(path)[1]


KIND = FileKind(
    "propositions",
    "a proposition set (seed 000)",
    lambda d: {"dimension", "propositions"} <= top_keys(d),
    _validate,
)
