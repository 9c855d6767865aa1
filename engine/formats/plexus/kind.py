"""The Plexus file kind of ``drift validate``: scores, scorecards and data-source configurations."""

from __future__ import annotations

from pathlib import Path

from engine.errors import FileIssue
from engine.formats.registry import FileKind, top_keys
from engine.propositions.yamlsource import Document

#: Top-level keys only Plexus files use (a score's graph, a scorecard's scores, a data source's queries).
PLEXUS_KEYS = frozenset({"graph", "scores", "sections", "depends_on", "model_provider", "queries", "searches"})


def detect(document: Document) -> bool:
    keys = top_keys(document)
    return bool(PLEXUS_KEYS & keys) or ({"name", "key"} <= keys and "dimension" not in keys)


def validate(path: Path) -> list[FileIssue]:
    from engine.formats.plexus.loader import inspect

    return list(inspect(path).errors)


KIND = FileKind("plexus", "a Plexus score, scorecard or data source (seed 003)", detect, validate)
