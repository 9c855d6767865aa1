"""Run summaries (mean, median, min, max, sd, histogram, top/bottom, errors), compare and JUnit output."""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from xml.etree import ElementTree as ET

import orjson

from engine.errors import ConfigurationError
from engine.formats.agentv.runner import CaseOutcome

BINS = ((0.0, 0.2), (0.2, 0.4), (0.4, 0.6), (0.6, 0.8), (0.8, 1.0))
TOP = 3


def summarise(outcomes: Sequence[CaseOutcome]) -> dict[str, Any]:
    scores = [o.score for o in outcomes]
    ranked = sorted(outcomes, key=lambda o: (-o.score, o.case.id))
    histogram = [
        {
            "range": f"{low:.1f}-{high:.1f}",
            "count": sum(1 for s in scores if low <= s < high or (high == 1.0 and s == 1.0)),
        }
        for low, high in BINS
    ]
    verdicts = {v: sum(1 for o in outcomes if o.verdict == v) for v in ("pass", "borderline", "fail")}
    return {
        "total": len(outcomes),
        "mean": statistics.fmean(scores) if scores else 0.0,
        "median": statistics.median(scores) if scores else 0.0,
        "min": min(scores, default=0.0),
        "max": max(scores, default=0.0),
        "sd": statistics.pstdev(scores) if len(scores) > 1 else 0.0,
        "histogram": histogram,
        "verdicts": verdicts,
        "top": [{"eval_id": o.case.id, "score": o.score} for o in ranked[:TOP]],
        "bottom": [{"eval_id": o.case.id, "score": o.score} for o in ranked[::-1][:TOP]],
        "errors": [{"eval_id": o.case.id, "error": o.error} for o in outcomes if o.error],
    }


def table(outcomes: Sequence[CaseOutcome], summary: Mapping[str, Any]) -> str:
    width = max((len(o.case.id) for o in outcomes), default=7)
    lines = [f"{'case':<{width}}  score  verdict     evaluators"]
    for o in outcomes:
        parts = ", ".join(f"{r.name}={r.score:.2f}" for r in o.results) or (o.error or "")
        lines.append(f"{o.case.id:<{width}}  {o.score:5.3f}  {o.verdict:<10}  {parts}")
    lines.append(
        f"cases {summary['total']}  mean {summary['mean']:.3f}  median {summary['median']:.3f}  "
        f"min {summary['min']:.3f}  max {summary['max']:.3f}  sd {summary['sd']:.3f}  errors {len(summary['errors'])}"
    )
    lines.append("histogram " + "  ".join(f"{b['range']}:{b['count']}" for b in summary["histogram"]))
    return "\n".join(lines)


def junit(outcomes: Sequence[CaseOutcome], suite: str, *, note: str | None = None) -> str:
    """JUnit XML; ``note`` (e.g. that code judges ran unsandboxed) becomes the suite's ``user_code`` property."""
    failures = sum(1 for o in outcomes if o.verdict != "pass" and not o.error)
    root = ET.Element(
        "testsuite",
        name=suite,
        tests=str(len(outcomes)),
        failures=str(failures),
        errors=str(sum(1 for o in outcomes if o.error)),
    )
    if note:
        ET.SubElement(ET.SubElement(root, "properties"), "property", name="user_code", value=note)
    for o in outcomes:
        case = ET.SubElement(
            root, "testcase", classname=o.case.dataset, name=o.case.id, time=f"{o.duration_ms / 1000:.3f}"
        )
        if o.error:
            ET.SubElement(case, "error", message=o.error)
        elif o.verdict != "pass":
            misses = "; ".join(m for r in o.results for m in r.misses)
            ET.SubElement(case, "failure", message=f"score {o.score:.3f} ({o.verdict})").text = misses
    return ET.tostring(root, encoding="unicode")


# -- compare -----------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Comparison:
    rows: tuple[tuple[str, float, float, float, str], ...]
    mean_a: float
    mean_b: float
    only_a: tuple[str, ...]
    only_b: tuple[str, ...]

    @property
    def mean_delta(self) -> float:
        return self.mean_b - self.mean_a

    def counts(self) -> dict[str, int]:
        return {k: sum(1 for r in self.rows if r[4] == k) for k in ("win", "loss", "tie")}


def read_scores(path: Path) -> dict[str, float]:
    """``eval_id`` (or 4.x ``test_id``) → score from a results JSONL file."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise ConfigurationError(f"{path}: cannot read results: {exc.strerror or exc}") from exc
    scores: dict[str, float] = {}
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            record = orjson.loads(line)
        except orjson.JSONDecodeError as exc:
            raise ConfigurationError(f"{path}:{number}: not JSON: {exc}") from exc
        key = record.get("eval_id", record.get("test_id")) if isinstance(record, dict) else None
        score = record.get("score") if isinstance(record, dict) else None
        if not isinstance(key, str) or not isinstance(score, int | float) or isinstance(score, bool):
            raise ConfigurationError(f"{path}:{number}: a result needs 'eval_id' (or 'test_id') and a numeric 'score'")
        scores[key] = float(score)
    return scores


def compare(a: Mapping[str, float], b: Mapping[str, float], threshold: float) -> Comparison:
    """Per case: ``win`` when B beats A by at least ``threshold``, ``loss`` when it trails by that, else ``tie``."""
    rows = []
    for key in sorted(set(a) & set(b)):
        delta = b[key] - a[key]
        outcome = "win" if delta >= threshold else ("loss" if delta <= -threshold else "tie")
        rows.append((key, a[key], b[key], delta, outcome))
    shared = [r for r in rows]
    mean_a = statistics.fmean(r[1] for r in shared) if shared else 0.0
    mean_b = statistics.fmean(r[2] for r in shared) if shared else 0.0
    return Comparison(tuple(rows), mean_a, mean_b, tuple(sorted(set(a) - set(b))), tuple(sorted(set(b) - set(a))))
