"""Which YAML kind a file is, and its validation: the table behind ``drift validate PATH…``.

Each kind is a :class:`FileKind`: a ``detect`` predicate over the parsed document (top-level keys decide; no
kind guesses from a file name) and a ``validate`` function returning ``FILE:LINE: field.path: message``
issues. Kinds are listed in :data:`KIND_PROVIDERS` as ``module:attribute`` and imported when first needed, so
importing this module loads no format.

A file no kind recognises is reported as such (one issue), never silently passed.
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from engine.errors import FileIssue
from engine.propositions.yamlsource import Document, read_yaml

#: ``module:attribute`` of every FileKind, most specific first (the first whose ``detect`` is true wins).
KIND_PROVIDERS: tuple[str, ...] = (
    "engine.propositions.kind:KIND",
    "engine.interventions.kind:KIND",
    "engine.formats.plexus.kind:KIND",
    "engine.personas:PERSONA_KIND",
    "engine.formats.metareason.kind:KIND",
    "engine.formats.agentv.kind:KIND",
    "engine.simulation.scenario:KIND",
    "engine.simulation.profiles:KIND",
    "engine.personas:FRAGMENT_KIND",
    "engine.formats.agentv.kind:SIDECAR_KIND",
)


@dataclass(frozen=True, slots=True)
class FileKind:
    name: str
    description: str
    detect: Callable[[Document], bool]
    validate: Callable[[Path], list[FileIssue]]


@dataclass(frozen=True, slots=True)
class Validation:
    path: Path
    kind: FileKind | None
    issues: tuple[FileIssue, ...]

    @property
    def ok(self) -> bool:
        return self.kind is not None and not self.issues


def top_keys(document: Document) -> frozenset[str]:
    data: Any = document.data
    return frozenset(str(k) for k in data) if isinstance(data, dict) else frozenset()


@functools.cache
def kinds() -> tuple[FileKind, ...]:
    loaded = []
    for provider in KIND_PROVIDERS:
        module, _, attribute = provider.partition(":")
        loaded.append(getattr(importlib.import_module(module), attribute))
    return tuple(loaded)


def classify(document: Document) -> FileKind | None:
    return next((kind for kind in kinds() if kind.detect(document)), None)


#: Suffixes of line-delimited JSON: read line by line by the commands that take them, never as YAML.
JSON_LINES = frozenset({".jsonl", ".ndjson"})
JSON_LINES_NOTE = (
    "a JSON Lines file, not YAML: drift validate checks YAML files; conversations are read by "
    "'drift eval run --messages FILE', AgentV datasets by 'drift agentv validate FILE'"
)


def validate_path(path: Path) -> Validation:
    if path.suffix.lower() in JSON_LINES:
        return Validation(path, None, (FileIssue(str(path), 0, "", JSON_LINES_NOTE),))
    document = read_yaml(path)
    if document.issues:
        return Validation(path, None, document.issues)
    kind = classify(document)
    if kind is None:
        names = ", ".join(k.name for k in kinds())
        return Validation(path, None, (FileIssue(str(path), 1, "", f"not a file kind drift knows ({names})"),))
    return Validation(path, kind, tuple(kind.validate(path)))


def expand(paths: Iterable[Path]) -> list[Path]:
    """Files as given; folders become their ``*.yaml`` / ``*.yml`` files, recursively, sorted."""
    files: list[Path] = []
    for path in paths:
        if path.is_dir():
            files.extend(sorted(p for p in path.rglob("*") if p.suffix in {".yaml", ".yml"} and p.is_file()))
        else:
            files.append(path)
    return files
