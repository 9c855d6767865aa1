"""The intervention-definitions file kind of ``drift validate`` (registered in :mod:`engine.formats.registry`)."""

from __future__ import annotations

from pathlib import Path

from engine.errors import FileIssue, PropositionFileError
from engine.formats.registry import FileKind, top_keys
from engine.interventions.loader import load_intervention_files


def _validate(path: Path) -> list[FileIssue]:
    try:
        load_intervention_files([path], path.parent.parent)
    except PropositionFileError as exc:
        return list(exc.issues)
    return []


KIND = FileKind("interventions", "intervention definitions", lambda d: "interventions" in top_keys(d), _validate)
