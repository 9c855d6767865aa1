"""AgentV JSONL datasets: one case per line, dataset-level defaults in a sidecar YAML of the same name.

``dataset.jsonl`` holds one JSON object per line (blank lines are skipped; a line that is not a JSON object is
reported with its line). ``dataset.yaml`` (or ``.yml``) beside it, when present, is the *sidecar*: as upstream
reads it, it supplies ``description``, ``dataset``, ``execution`` (the default ``target`` and ``evaluators`` of
every case; a case's own ``execution`` overrides them) and ``evaluator`` (the kind that judges a case without an
evaluator list). Any other key in it is reported at its line (AgentV ignores it there), and so is a sidecar value
of the wrong shape. Without a sidecar the dataset is named after the file. The dialect follows the cases' keys:
4.x when none uses a seed-era key (``expected_outcome``, ``outcome``, ``input_messages``) and one uses
``criteria`` or ``assertions``; seed era otherwise.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson

from engine.errors import FileIssue
from engine.propositions.yamlsource import Document, FieldPath, read_yaml

_SEED_KEYS = {"expected_outcome", "outcome", "input_messages"}
_4X_KEYS = {"criteria", "assertions"}


#: the keys AgentV reads from a sidecar (jsonl-parser.ts, agentv @ 7df7ab34c); the case lists are never read there
SIDECAR_KEYS = ("description", "dataset", "execution", "evaluator")


def sidecar_of(path: Path) -> Path | None:
    """The sidecar YAML of the ``.jsonl`` dataset ``path``, when one sits beside it."""
    for suffix in (".yaml", ".yml"):
        candidate = path.with_suffix(suffix)
        if candidate.is_file():
            return candidate
    return None


def dataset_of(sidecar: Path) -> Path | None:
    """The ``.jsonl`` dataset whose sidecar ``sidecar`` is, when one sits beside it."""
    candidate = sidecar.with_suffix(".jsonl")
    return candidate if sidecar.suffix in {".yaml", ".yml"} and candidate.is_file() else None


def check_sidecar(document: Document) -> tuple[dict[str, Any], list[FileIssue]]:
    """The defaults a sidecar supplies, and a located issue for each key or value AgentV would not read."""
    from engine.formats.agentv.model import canonical_type

    data = document.data
    if not isinstance(data, dict):
        return {}, [document.issue((), "a sidecar must be a mapping (description, dataset, execution, evaluator)")]
    defaults: dict[str, Any] = {}
    issues: list[FileIssue] = []
    for key, value in data.items():
        if key not in SIDECAR_KEYS:
            known = ", ".join(SIDECAR_KEYS)
            issues.append(document.issue((key,), f"not read from a sidecar: AgentV takes only {known} from it"))
        elif key in {"description", "dataset"} and not isinstance(value, str):
            issues.append(document.issue((key,), f"{key} must be a string"))
        elif key == "execution" and not isinstance(value, dict):
            issues.append(document.issue((key,), "execution must be a mapping (target, evaluators)"))
        elif key == "evaluator" and not (isinstance(value, str) and canonical_type(value) == "llm_judge"):
            issues.append(document.issue((key,), default_kind_problem(value)))
        else:
            defaults[key] = value
    return defaults, issues


def default_kind_problem(value: Any) -> str:
    """Why ``evaluator: VALUE`` cannot be a default evaluator kind (only llm_judge runs without settings)."""
    return (
        f"evaluator {value!r}: the default evaluator of a case without an evaluator list can only be llm_judge "
        "(AgentV judges such a case with llm_judge whatever kind is named); list other evaluators under "
        "execution.evaluators"
    )


def _sidecar(path: Path) -> tuple[dict[str, Any], list[FileIssue]]:
    sidecar = sidecar_of(path)
    if sidecar is None:
        return {}, []
    document = read_yaml(sidecar)
    if document.issues:
        return {}, list(document.issues)
    return check_sidecar(document)


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
