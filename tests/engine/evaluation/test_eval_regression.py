"""Harness results, baseline files and the regression verdicts (drop > 1.0, intervals, stale)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.errors import ConfigurationError
from engine.evaluation.baseline import (
    Baseline,
    BaselineDimension,
    baseline_from_result,
    load_baseline,
    merge_baseline,
    write_baseline,
)
from engine.evaluation.harness import AgentResult, DimensionResult, HarnessOptions, evaluate_cast, select_agents
from engine.evaluation.regression import Verdict, build_report, compare_dimension, difference_interval
from engine.evaluation.run import EvaluationRun, RunStatus
from engine.judges.scripted import ScriptedJudge
from engine.models import Dimension, Event
from engine.propositions import PropositionSet
from engine.scoring import DimensionScore

from .conftest import JudgeFactory, TreeFactory

DIMS = (Dimension.ADHERENCE, Dimension.FLUENCY, Dimension.CONVERGENCE, Dimension.IDEAS_QUANTITY)


async def _evaluate(
    judge: ScriptedJudge,
    events: tuple[Event, ...],
    root: Path,
    agents: tuple[str, ...] = ("jim", "pam"),
    repeats: int = 1,
) -> tuple[AgentResult, ...]:
    return await evaluate_cast(judge, events, agents, HarnessOptions(DIMS, root, repeats=repeats))


@pytest.fixture
def cast_tree(proposition_tree: TreeFactory) -> Path:
    return proposition_tree(personas=("jim", "pam"))


async def test_unit_scores_are_per_message_and_per_channel(
    cast_tree: Path, scripted: JudgeFactory, sample_events: tuple[Event, ...]
) -> None:
    judge = scripted(rules=[{"proposition": "adh-*", "message_contains": "camera", "value": 2}])
    (jim,) = await _evaluate(judge, sample_events, cast_tree, ("jim",))
    adherence = jim.get(Dimension.ADHERENCE)
    assert len(adherence.units) == 6  # one per message of Jim
    assert sorted(adherence.units)[0] == 2.0 and adherence.units.count(7.0) == 5  # only the camera message
    assert adherence.score == 2.0  # the trajectory holds the camera message: the rule fires
    assert len(jim.get(Dimension.CONVERGENCE).units) == 2  # #general and the DM
    unit_requests = [r for r in judge.log.calls if r.action is not None]
    assert len(unit_requests) == 12  # adherence and fluency, six messages each
    assert all(r.supplementary for r in unit_requests if r.claims[0].id.startswith("flu"))


async def test_repeats_report_the_spread(
    cast_tree: Path, scripted: JudgeFactory, sample_events: tuple[Event, ...]
) -> None:
    (jim,) = await _evaluate(scripted(), sample_events, cast_tree, ("jim",), repeats=3)
    spread = jim.get(Dimension.FLUENCY).spread
    assert spread is not None and spread.scores == (7.0, 7.0, 7.0) and spread.sd == 0.0 and spread.range == 0.0
    (single,) = await _evaluate(scripted(), sample_events, cast_tree, ("jim",))
    assert single.get(Dimension.FLUENCY).spread is None


def test_agents_default_to_everyone_who_acted(sample_events: tuple[Event, ...]) -> None:
    assert select_agents(sample_events, None) == ("michael", "dwight", "jim", "pam", "angela", "kevin", "oscar")
    assert select_agents(sample_events, ["pam", "jim", "pam"]) == ("pam", "jim")
    with pytest.raises(ConfigurationError, match="facilitator"):
        select_agents(sample_events, ["facilitator"])


async def test_baselines_round_trip_and_are_deterministic(
    cast_tree: Path, scripted: JudgeFactory, sample_events: tuple[Event, ...], tmp_path: Path
) -> None:
    (jim,) = await _evaluate(scripted(default=6), sample_events, cast_tree, ("jim",))
    baseline = baseline_from_result(jim, "scripted:test", "abc")
    path = write_baseline(tmp_path / "baselines", baseline)
    first = path.read_text()
    write_baseline(tmp_path / "baselines", baseline)
    assert path.read_text() == first and path.name == "jim.json"
    loaded = load_baseline(tmp_path / "baselines", "jim")
    assert loaded == baseline
    assert list(json.loads(first)["dimensions"]) == [d.value for d in DIMS]
    assert load_baseline(tmp_path / "baselines", "pam") is None


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{", "not valid JSON"),
        ('{"agent_id": "jim", "dimensions": {"adherence": {"score": "high"}}}', "dimensions.adherence"),
        ('{"agent_id": "pam"}', "expected 'jim'"),
        ('{"agent_id": "jim", "version": 9}', "version 9"),
    ],
)
def test_malformed_baselines_are_configuration_errors(tmp_path: Path, content: str, message: str) -> None:
    (tmp_path / "jim.json").write_text(content)
    with pytest.raises(ConfigurationError, match=message):
        load_baseline(tmp_path, "jim")


async def test_unchanged_input_has_no_regression(
    cast_tree: Path, scripted: JudgeFactory, sample_events: tuple[Event, ...]
) -> None:
    results = await _evaluate(scripted(default=6), sample_events, cast_tree)
    baselines: dict[str, Baseline | None] = {r.agent_id: baseline_from_result(r, "j", None) for r in results}
    report = build_report("j", results, baselines)
    assert report.regressions == () and report.stale == ()
    assert {c.verdict for c in report.comparisons} == {Verdict.OK}
    assert all(c.delta == 0.0 for c in report.comparisons)


async def test_a_drop_of_more_than_one_point_is_a_regression(
    cast_tree: Path, scripted: JudgeFactory, sample_events: tuple[Event, ...]
) -> None:
    before = await _evaluate(scripted(default=8), sample_events, cast_tree)
    baselines: dict[str, Baseline | None] = {r.agent_id: baseline_from_result(r, "j", None) for r in before}
    drop = scripted(default=8, rules=[{"agent": "jim", "proposition": "adh-*", "value": 3}])
    report = build_report("j", await _evaluate(drop, sample_events, cast_tree), baselines)
    (regression,) = report.regressions
    assert (regression.agent_id, regression.dimension) == ("jim", Dimension.ADHERENCE)
    assert regression.delta == -5.0
    assert regression.interval is not None and regression.interval[1] < 0
    assert regression.likely_regression and regression.verdict is Verdict.LIKELY_REGRESSION


def _current(score: float, units: tuple[float, ...], content_hash: str = "h" * 64) -> DimensionResult:
    detail = DimensionScore(Dimension.FLUENCY, "a", score, (), "test")
    pset = PropositionSet(dimension=Dimension.FLUENCY)
    return DimensionResult(Dimension.FLUENCY, score, detail, pset, content_hash, (score,), units)


@pytest.mark.parametrize(
    ("baseline", "current", "regression", "verdict"),
    [
        (7.0, 6.0, False, Verdict.OK),  # exactly 1.0 lower is not "more than 1.0"
        (7.0, 5.9, True, Verdict.REGRESSION),
        (5.0, 8.0, False, Verdict.OK),
    ],
)
def test_the_regression_threshold(baseline: float, current: float, regression: bool, verdict: Verdict) -> None:
    stored = BaselineDimension(score=baseline, content_hash="h" * 64, units=(baseline,))
    comparison = compare_dimension("a", _current(current, (current,)), stored)
    assert comparison.regression is regression and comparison.verdict is verdict
    assert comparison.interval is None  # one unit per side: no interval, so never "likely"


def test_a_noisy_drop_is_a_regression_but_not_likely() -> None:
    stored = BaselineDimension(score=7.0, content_hash="h" * 64, units=(9.0, 1.0, 9.0, 1.0, 9.0))
    comparison = compare_dimension("a", _current(5.5, (1.0, 9.0, 1.0, 9.0, 1.0)), stored)
    assert comparison.regression and not comparison.likely_regression
    assert comparison.interval is not None and comparison.interval[0] < 0 < comparison.interval[1]


def test_a_changed_content_hash_is_stale_not_a_regression() -> None:
    stored = BaselineDimension(score=9.0, content_hash="a" * 64, units=(9.0, 9.0))
    comparison = compare_dimension("a", _current(2.0, (2.0, 2.0), "b" * 64), stored)
    assert comparison.stale and not comparison.regression and comparison.verdict is Verdict.STALE
    assert comparison.delta == -7.0  # shown for information


async def test_editing_a_proposition_makes_only_that_dimension_stale(
    cast_tree: Path, scripted: JudgeFactory, sample_events: tuple[Event, ...]
) -> None:
    results = await _evaluate(scripted(), sample_events, cast_tree)
    baselines: dict[str, Baseline | None] = {r.agent_id: baseline_from_result(r, "j", None) for r in results}
    fluency = cast_tree / "fluency" / "_default.yaml"
    data = yaml.safe_load(fluency.read_text())
    data["propositions"][0]["weight"] = 0.5
    fluency.write_text(yaml.safe_dump(data))
    report = build_report("j", await _evaluate(scripted(), sample_events, cast_tree), baselines)
    assert {(c.agent_id, c.dimension) for c in report.stale} == {("jim", Dimension.FLUENCY), ("pam", Dimension.FLUENCY)}
    assert any("stale baseline(s) for jim, pam" in note for note in report.notes)


async def test_editing_a_persona_makes_adherence_stale_only(
    cast_tree: Path, scripted: JudgeFactory, sample_events: tuple[Event, ...]
) -> None:
    results = await _evaluate(scripted(), sample_events, cast_tree, ("jim",))
    baselines: dict[str, Baseline | None] = {"jim": baseline_from_result(results[0], "j", None)}
    persona = cast_tree / "personas" / "jim.yaml"
    persona.write_text(persona.read_text().replace("careful", "reckless"))
    report = build_report("j", await _evaluate(scripted(), sample_events, cast_tree, ("jim",)), baselines)
    assert [c.dimension for c in report.stale] == [Dimension.ADHERENCE]  # the other sets hide the persona


async def test_a_baseline_from_another_judge_is_shown_not_compared(
    cast_tree: Path, scripted: JudgeFactory, sample_events: tuple[Event, ...]
) -> None:
    before = await _evaluate(scripted(default=9), sample_events, cast_tree, ("jim",))
    baselines: dict[str, Baseline | None] = {"jim": baseline_from_result(before[0], "anthropic:model", None)}
    report = build_report(
        "scripted:inline", await _evaluate(scripted(default=2), sample_events, cast_tree, ("jim",)), baselines
    )
    assert report.regressions == ()
    assert {c.verdict for c in report.comparisons} == {Verdict.OTHER_JUDGE}
    assert all(c.delta is not None and c.delta < -1 for c in report.comparisons if c.dimension is Dimension.FLUENCY)


def test_intervals_need_two_units_per_side() -> None:
    assert difference_interval([1.0], [1.0, 2.0], 1.0) is None
    low, high = difference_interval([5.0, 5.0, 5.0], [3.0, 3.0, 3.0], -2.0) or (0.0, 0.0)
    assert low == high == -2.0


def test_the_interval_sits_around_the_reported_delta_not_the_unit_means() -> None:
    # The case a user hit: the whole-trajectory score fell 0.40, the per-message means fell about 2.4.
    baseline_units = (6.5, 7.0, 7.5, 6.0, 7.2)
    current_units = (4.0, 5.1, 4.6, 4.9, 4.4)
    comparison = compare_dimension(
        "michael",
        _current(4.39, current_units),
        BaselineDimension(score=4.79, content_hash="h" * 64, units=baseline_units),
    )
    assert comparison.delta == -0.4
    assert comparison.interval is not None
    assert comparison.interval[0] <= -0.4 <= comparison.interval[1]
    assert comparison.verdict is Verdict.OK


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.floats(0, 9), min_size=2, max_size=12),
    st.lists(st.floats(0, 9), min_size=2, max_size=12),
    st.floats(-9, 9),
)
def test_property_the_point_estimate_lies_inside_its_interval(
    baseline_units: list[float], current_units: list[float], delta: float
) -> None:
    interval = difference_interval(baseline_units, current_units, delta)
    assert interval is not None
    assert interval[0] <= delta <= interval[1]


def test_a_baseline_of_another_conversation_is_not_comparable() -> None:
    stored = BaselineDimension(score=9.0, content_hash="h" * 64, units=(9.0, 9.0))
    comparison = compare_dimension("a", _current(2.0, (2.0, 2.0)), stored, same_conversation=False)
    assert not comparison.regression
    assert comparison.verdict is Verdict.OTHER_CONVERSATION


def test_notes_name_missing_baselines_and_other_judges(tmp_path: Path) -> None:
    empty = EvaluationRun("jim", (), RunStatus.COMPLETED)
    results = [AgentResult("jim", "Jim", empty, ()), AgentResult("pam", "Pam", empty, ())]
    other = Baseline(agent_id="pam", judge="anthropic:x", messages_sha256="old")
    report = build_report("scripted:y", results, {"jim": None, "pam": other}, "new")
    assert any("jim: no baseline" in n for n in report.notes)
    assert any("baseline judged by anthropic:x" in n for n in report.notes)
    assert any("different conversation" in n for n in report.notes)


def test_merging_keeps_dimensions_that_were_not_re_evaluated() -> None:
    dim = BaselineDimension(score=5.0, content_hash="a" * 64)
    old = Baseline(agent_id="jim", judge="j", dimensions={Dimension.FLUENCY: dim})
    new = Baseline(agent_id="jim", judge="j", dimensions={Dimension.ADHERENCE: dim})
    assert set(merge_baseline(old, new).dimensions) == {Dimension.FLUENCY, Dimension.ADHERENCE}
    other_judge = new.model_copy(update={"judge": "k"})
    assert set(merge_baseline(old, other_judge).dimensions) == {Dimension.ADHERENCE}
