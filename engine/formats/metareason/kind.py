"""The MetaReason prompt family as a :class:`~engine.formats.registry.FileKind` for ``drift validate``."""

from __future__ import annotations

from pathlib import Path

from engine.errors import FileIssue
from engine.formats.registry import FileKind, top_keys
from engine.propositions.yamlsource import Document

#: top-level keys only a MetaReason file has (either era: later-era files get "unsupported format")
_MARKERS = frozenset({"prompt_id", "prompt_template", "spec_id", "oracles", "statistical_config"})


def _detect(document: Document) -> bool:
    return bool(_MARKERS & top_keys(document))


def _validate(path: Path) -> list[FileIssue]:
    from engine.formats.metareason.loader import check_family

    return list(check_family(path).errors)


KIND = FileKind("metareason", "a MetaReason prompt family (seed 002)", _detect, _validate)
