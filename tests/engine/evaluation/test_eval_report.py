"""Report renderers: JSON shape, the Markdown PR comment, JUnit XML, the text table."""

from __future__ import annotations

import json
from pathlib import Path
from xml.etree import ElementTree as ET

import pytest

from engine.evaluation.baseline import Baseline, BaselineDimension, baseline_from_result
from engine.evaluation.harness import HarnessOptions, evaluate_cast
from engine.evaluation.regression import Report, build_report
from engine.evaluation.report import REPORT_MARKER, render_json, render_junit, render_markdown, render_table
from engine.models import Dimension, Event

from .conftest import JudgeFactory, TreeFactory

DIMS = (Dimension.ADHERENCE, Dimension.CONVERGENCE, Dimension.IDEAS_QUANTITY)


@pytest.fixture
async def report(proposition_tree: TreeFactory, scripted: JudgeFactory, sample_events: tuple[Event, ...]) -> Report:
    """Jim regresses on adherence, Pam improves there but her convergence baseline is stale, Kevin has none."""
    adherence = {
        "propositions": [
            {"id": "adh-a", "claim": "{{agent_name}} is in character"},
            {"id": "adh-b", "claim": "{{agent_name}} sounds like a chatbot", "inverted": True},
        ]
    }
    root = proposition_tree(personas=("jim", "pam", "kevin"), extra={"adherence": adherence})
    options = HarnessOptions(DIMS, root)
    agents = ("jim", "pam", "kevin")
    before = await evaluate_cast(scripted(default=8, default_count=5), sample_events, agents, options)
    baselines: dict[str, Baseline | None] = {
        r.agent_id: baseline_from_result(r, "scripted:inline", None) for r in before
    }
    pam = baselines["pam"]
    assert pam is not None
    stale = BaselineDimension(score=8.0, content_hash="0" * 64)
    baselines["pam"] = pam.model_copy(update={"dimensions": {**pam.dimensions, Dimension.CONVERGENCE: stale}})
    baselines["kevin"] = None
    judge = scripted(
        default=8,
        default_count=5,
        rules=[{"agent": "jim", "proposition": "adh-a", "value": 1}, {"proposition": "adh-b", "value": 4}],
    )
    return build_report(judge.name, await evaluate_cast(judge, sample_events, agents, options), baselines)


def test_json_has_scores_baselines_deltas_and_propositions(report: Report) -> None:
    document = json.loads(render_json(report))
    jim = document["agents"]["jim"]["adherence"]
    assert jim["baseline"] == 4.5  # (8 + (9 - 8)) / 2
    assert jim["score"] == 3.0 and jim["delta"] == -1.5 and jim["regression"] is True
    assert jim["interval"][1] < 0 and jim["likely_regression"] is True and jim["verdict"] == "likely regression"
    assert document["agents"]["pam"]["adherence"]["delta"] == 2.0
    ideas = document["agents"]["jim"]["ideas_quantity"]
    assert ideas["score"] == 10.0 and ideas["interval"] is None  # a count: 5 per channel, two channels
    assert len(ideas["propositions"][0]["items"]) == 10
    assert document["agents"]["pam"]["convergence"]["stale"] is True
    assert document["agents"]["kevin"]["adherence"]["verdict"] == "no baseline"
    assert [(r["agent_id"], r["dimension"]) for r in document["regressions"]] == [("jim", "adherence")]
    assert document["stale"] == [{"agent_id": "pam", "dimension": "convergence"}]


def test_weights_and_inversion_are_visible_in_the_json(report: Report) -> None:
    document = json.loads(render_json(report))
    props = {p["id"]: p for p in document["agents"]["jim"]["adherence"]["propositions"]}
    assert props["adh-a"] | {"raw": 1, "score": 1.0, "weight": 1.0, "inverted": False} == props["adh-a"]
    assert props["adh-b"] | {"raw": 4, "score": 5.0, "weight": 1.0, "inverted": True} == props["adh-b"]
    assert props["adh-b"]["reasoning"].startswith("[scripted]")


def test_markdown_is_a_marked_table(report: Report) -> None:
    text = render_markdown(report)
    lines = text.splitlines()
    assert lines[0] == REPORT_MARKER
    header = next(i for i, line in enumerate(lines) if line.startswith("| Agent |"))
    assert "Baseline" in lines[header] and "Current" in lines[header] and "Verdict" in lines[header]
    rows = [line for line in lines[header + 2 :] if line.startswith("|")]
    assert len(rows) == len(report.comparisons) == 9
    jim_adherence = next(r for r in rows if r.startswith("| jim | adherence |"))
    assert "| 4.50 | 3.00 | -1.50 |" in jim_adherence and "likely regression" in jim_adherence
    assert any("| pam | convergence |" in r and "stale" in r for r in rows)
    assert "no baseline" in next(r for r in rows if r.startswith("| kevin | adherence |"))


def test_junit_parses_with_a_suite_per_agent_and_failures_for_regressions(report: Report) -> None:
    root = ET.fromstring(render_junit(report))
    assert root.tag == "testsuites" and root.get("failures") == "1"
    suites = {s.get("name"): s for s in root.findall("testsuite")}
    assert set(suites) == {"jim", "pam", "kevin"}
    jim_cases = {c.get("name"): c for c in suites["jim"].findall("testcase")}
    assert set(jim_cases) == {d.value for d in DIMS}
    failure = jim_cases["adherence"].find("failure")
    assert failure is not None and "likely regression" in (failure.get("message") or "")
    assert jim_cases["convergence"].find("failure") is None
    pam_cases = {c.get("name"): c for c in suites["pam"].findall("testcase")}
    assert pam_cases["convergence"].find("skipped") is not None
    assert suites["kevin"].get("skipped") == "3"


def test_table_lists_every_comparison(report: Report, tmp_path: Path) -> None:
    text = render_table(report)
    assert text.splitlines()[0].split()[:4] == ["agent", "dimension", "baseline", "current"]
    assert "1 regression(s), 1 stale" in text
    assert sum(1 for line in text.splitlines() if line.startswith(("jim ", "pam ", "kevin "))) == 9
