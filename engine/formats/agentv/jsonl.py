"""AgentV JSONL datasets: one case per line, dataset-level defaults in a sidecar YAML of the same name.

``dataset.jsonl`` holds one JSON object per line (blank lines are skipped; a line that is not a JSON object is
reported with its line). ``dataset.yaml`` (or ``.yml``) beside it, when present, supplies ``description``,
``dataset``, ``execution`` (target, default evaluators) and ``evaluators``; without it the dataset is named after
the file. The dialect follows the cases' keys: 4.x when none uses a seed-era key (``expected_outcome``,
``outcome``, ``input_messages``) and one uses ``criteria`` or ``assertions``; seed era otherwise.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson

from engine.errors import FileIssue
from engine.propositions.yamlsource import Document, FieldPath, read_yaml

_SEED_KEYS = {"expected_outcome", "outcome", "input_messages"}
_4X_KEYS = {"criteria", "assertions"}


def _sidecar(path: Path) -> tuple[dict[str, Any], list[FileIssue]]:
    for suffix in (".yaml", ".yml"):
        candidate = path.with_suffix(suffix)
        if candidate.is_file():
            document = read_yaml(candidate)
            if document.issues:
                return {}, list(document.issues)
            if isinstance(document.data, dict):
                return {k: v for k, v in document.data.items() if k not in {"evalcases", "eval_cases", "tests"}}, []
    return {}, []


def read_jsonl(path: Path) -> Document:
    """The dataset as a :class:`Document` shaped like a YAML eval file (``evalcases`` or ``tests``), with lines."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        return Document(str(path), None, issues=(FileIssue(str(path), 1, "", f"cannot read file: {exc.strerror}"),))
    cases: list[Any] = []
    numbers: list[int] = []
    issues: list[FileIssue] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            value = orjson.loads(line)
        except orjson.JSONDecodeError as exc:
            issues.append(FileIssue(str(path), number, "", f"not JSON: {exc}"))
            continue
        if not isinstance(value, dict):
            issues.append(FileIssue(str(path), number, "", "each line must be a JSON object (one case)"))
            continue
        cases.append(value)
        numbers.append(number)
    keys = {k for case in cases for k in case}
    list_key = "tests" if not keys & _SEED_KEYS and keys & _4X_KEYS else "evalcases"
    defaults, sidecar_issues = _sidecar(path)
    data = {**defaults, list_key: cases}
    lines: dict[FieldPath, int] = {(): 1, (list_key,): 1}
    lines.update({(list_key, index): number for index, number in enumerate(numbers)})
    return Document(str(path), data, lines, tuple(issues + sidecar_issues))
