"""Labelled datasets for ``drift plexus evaluate``: CSV or JSONL rows of text, metadata and labels.

A row has ``text`` (required), an optional id (``id``, ``item_id`` or ``content_id``; else its row number),
optional ``metadata`` (a JSON object; in CSV a JSON string) and one label per score, in a column named
``<score>_label`` or ``<score>`` (exact name first, then case-insensitive). Bad rows raise a
ConfigurationError naming ``FILE:LINE``.
"""

from __future__ import annotations

import csv
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from engine.errors import ConfigurationError

ID_COLUMNS = ("id", "item_id", "content_id")


@dataclass(frozen=True)
class Row:
    item_id: str
    text: str
    metadata: dict[str, Any] = field(default_factory=dict)
    columns: dict[str, Any] = field(default_factory=dict)
    line: int = 0

    def label(self, score: str) -> tuple[bool, Any]:
        """(found, raw label) for ``score``: ``<score>_label`` wins over ``<score>``."""
        for wanted in (f"{score}_label", score):
            if wanted in self.columns:
                return True, self.columns[wanted]
        lowered = {key.lower(): value for key, value in self.columns.items()}
        for wanted in (f"{score}_label".lower(), score.lower()):
            if wanted in lowered:
                return True, lowered[wanted]
        return False, None


def _row(path: Path, line: int, record: Any, index: int) -> Row:
    if not isinstance(record, dict):
        raise ConfigurationError(f"{path}:{line}: a row must be an object with 'text'")
    text = record.get("text")
    if not isinstance(text, str):
        raise ConfigurationError(f"{path}:{line}: text: required (a string)")
    metadata: Any = record.get("metadata") or {}
    if isinstance(metadata, str):
        try:
            metadata = json.loads(metadata)
        except ValueError as exc:
            raise ConfigurationError(f"{path}:{line}: metadata: not JSON ({exc.args[0]})") from None
    if not isinstance(metadata, dict):
        raise ConfigurationError(f"{path}:{line}: metadata: must be a JSON object")
    item_id = next((str(record[c]) for c in ID_COLUMNS if record.get(c) not in (None, "")), str(index + 1))
    columns = {k: v for k, v in record.items() if k not in {"text", "metadata", *ID_COLUMNS}}
    return Row(item_id, text, metadata, columns, line)


def read_dataset(path: Path) -> list[Row]:
    if not path.is_file():
        raise ConfigurationError(f"no such dataset: {path}")
    if path.suffix.lower() in {".jsonl", ".ndjson"}:
        return _read_jsonl(path)
    if path.suffix.lower() == ".csv":
        return _read_csv(path)
    raise ConfigurationError(f"{path}: datasets are .csv or .jsonl files")


def _read_jsonl(path: Path) -> list[Row]:
    rows: list[Row] = []
    for line, raw in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not raw.strip():
            continue
        try:
            record = json.loads(raw)
        except ValueError as exc:
            raise ConfigurationError(f"{path}:{line}: not JSON ({exc.args[0]})") from None
        rows.append(_row(path, line, record, len(rows)))
    return rows


def _read_csv(path: Path) -> list[Row]:
    with path.open(encoding="utf-8-sig", newline="") as handle:
        reader = csv.DictReader(handle)
        if reader.fieldnames is None or "text" not in reader.fieldnames:
            raise ConfigurationError(f"{path}:1: the header needs a 'text' column")
        return [_row(path, reader.line_num, record, index) for index, record in enumerate(reader)]
