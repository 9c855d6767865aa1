"""The AgentV eval file as a :class:`~engine.formats.registry.FileKind` (``drift validate``)."""

from __future__ import annotations

from pathlib import Path

from engine.errors import FileIssue
from engine.formats.agentv.loader import SEED_LISTS, load_eval_file
from engine.formats.registry import FileKind, top_keys


def _validate(path: Path) -> list[FileIssue]:
    return load_eval_file(path)[1]


KIND = FileKind(
    "agentv",
    "an AgentV eval file (evalcases / eval_cases, or 4.x tests)",
    lambda d: bool(top_keys(d) & {*SEED_LISTS, "tests"}),
    _validate,
)
