"""Plexus data-source configurations (``class: CallCriteriaDBCache`` + ``queries`` / ``searches``).

drift does not fetch data from Plexus sources (datasets come from CSV/JSONL files), but ``drift plexus
validate`` checks these files by the upstream linter's rules so a scorecard folder validates as a whole.
"""

from __future__ import annotations

from typing import Any

from engine.errors import FileIssue
from engine.propositions.yamlsource import Document

DATA_SOURCE_CLASSES = ("CallCriteriaDBCache", "FeedbackItems")
ITEM_LIST_SUFFIXES = (".csv", ".txt")
DATA_SOURCE_KEYS = frozenset({"queries", "searches"})


def is_data_source(data: dict[str, Any]) -> bool:
    if "graph" in data or "scores" in data or "name" in data:
        return False
    return bool(DATA_SOURCE_KEYS & data.keys()) or data.get("class") in DATA_SOURCE_CLASSES


def check_data_source(document: Document, data: dict[str, Any]) -> tuple[list[FileIssue], list[FileIssue]]:
    """(errors, warnings) of a data-source mapping."""
    errors: list[FileIssue] = []
    warnings: list[FileIssue] = []
    source_class = data.get("class")
    if source_class is None:
        errors.append(document.issue(("class",), "required key is missing"))
    elif source_class not in DATA_SOURCE_CLASSES:
        errors.append(
            document.issue(
                ("class",), f"unknown data-source class {source_class!r}; known: {', '.join(DATA_SOURCE_CLASSES)}"
            )
        )
    if not data.get("queries") and not data.get("searches"):
        errors.append(document.issue((), "a data source needs 'queries' or 'searches'"))
    for index, query in enumerate(data.get("queries") or []):
        errors.extend(_query(document, ("queries", index), query))
    for index, search in enumerate(data.get("searches") or []):
        where = ("searches", index)
        filename = search.get("item_list_filename") if isinstance(search, dict) else None
        if not isinstance(filename, str) or not filename:
            errors.append(document.issue((*where, "item_list_filename"), "required key is missing"))
        elif not filename.lower().endswith(ITEM_LIST_SUFFIXES):
            warnings.append(document.issue((*where, "item_list_filename"), "item lists are usually .csv or .txt files"))
    return errors, warnings


def _query(document: Document, where: tuple[str | int, ...], query: Any) -> list[FileIssue]:
    if not isinstance(query, dict):
        return [document.issue(where, "a query must be a mapping")]
    issues = []
    for key in ("scorecard_id", "number"):
        value = query.get(key)
        if value is None:
            issues.append(document.issue((*where, key), "required key is missing"))
        elif isinstance(value, bool) or not isinstance(value, int) or value <= 0:
            issues.append(document.issue((*where, key), f"must be a positive whole number (got {value!r})"))
    return issues
