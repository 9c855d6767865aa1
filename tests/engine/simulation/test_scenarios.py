"""Scenario files: the four bundled ones, FILE:LINE errors, prompts, arms and session plans."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.errors import ConfigurationError
from engine.formats.registry import validate_path
from engine.simulation.plan import plan_sessions
from engine.simulation.scenario import BUNDLED_SCENARIOS, load_scenario, read_scenario_file, render_prompt

# scenario, sessions per arm, (agent, session) scores per arm (Table 1's N_e and N_a), gate on, variety on
TABLE1 = [
    ("brainstorming-average", 40, 200, True, True),
    ("brainstorming-difficult-full", 24, 96, True, True),
    ("brainstorming-difficult-variety", 24, 96, False, True),
    ("debate-controversial", 24, 120, True, False),
]


@pytest.mark.parametrize(("name", "sessions", "scores", "gate", "variety"), TABLE1)
def test_bundled_scenarios_match_table1(name: str, sessions: int, scores: int, gate: bool, variety: bool) -> None:
    scenario = load_scenario(name)
    assert scenario.sessions_per_arm == sessions and sessions * scenario.group_size == scores
    treatment, control = scenario.arms.treatment.config(), scenario.arms.control.config()
    assert treatment.needs_judge is gate and treatment.variety_intervention_enabled is variety
    if gate:
        assert treatment.gate_adherence_threshold == 5 and treatment.enabled_gate_dimensions() == ("adherence",)
    assert not control.needs_judge and not control.variety_intervention_enabled
    assert validate_path(BUNDLED_SCENARIOS / f"{name}.yaml").ok


def test_prompts_render_with_theme_and_participants() -> None:
    scenario = load_scenario("debate-controversial")
    text = render_prompt(scenario.facilitator.introduction, theme="Motion X.", participants=["Ana", "Bo"])
    assert "Ana, Bo" in text and "Motion X." in text


def _write(tmp_path: Path, old: str, new: str) -> Path:
    text = (BUNDLED_SCENARIOS / "brainstorming-average.yaml").read_text(encoding="utf-8")
    assert old in text
    path = tmp_path / "s.yaml"
    path.write_text(text.replace(old, new, 1), encoding="utf-8")
    return path


def _line_of(path: Path, needle: str) -> int:
    return next(i for i, line in enumerate(path.read_text().splitlines(), 1) if needle in line)


@pytest.mark.parametrize(
    ("old", "new", "field", "message"),
    [
        ("agent_order: parallel", "agent_order: random", "agent_order", "'parallel' or 'sequential_random'"),
        ("group_size: 5", "group_size: 0", "group_size", "greater than or equal to 1"),
        ("gate_adherence_threshold: 5", "gate_adherence_treshold: 5",
         "arms.treatment.agent_evaluation_config.gate_adherence_treshold", "did you mean 'gate_adherence_threshold'"),
        ("Today's subject is {{ theme }}.", "Today's subject is {{ topic }}.", "facilitator.introduction",
         "unknown variable(s) topic"),
        ("  mission: 10", "  mission: ten", "steps.mission", "valid integer"),
        ("  - id: no-car", "  - id: no car", "themes.2.id", "not a valid id"),
    ],
)  # fmt: skip
def test_errors_are_located(tmp_path: Path, old: str, new: str, field: str, message: str) -> None:
    path = _write(tmp_path, old, new)
    scenario, issues = read_scenario_file(path)
    assert scenario is None
    (issue,) = issues
    assert (issue.file, issue.path) == (str(path), field)
    needle = "  introduction: >-" if field.startswith("facilitator") else new
    assert issue.line in {_line_of(path, needle), _line_of(path, needle) + 1}  # folded block: key or value
    assert message in issue.message


def test_unknown_scenario_name_lists_the_bundled_ones() -> None:
    with pytest.raises(
        ConfigurationError, match=r"did you mean 'brainstorming-average'.*bundled: brainstorming-average"
    ):
        load_scenario("brainstorming")


def test_plans_are_deterministic_paired_and_cover_every_group_theme_and_repetition() -> None:
    scenario = load_scenario("brainstorming-difficult-full")
    ids = [f"p{i:02d}" for i in range(12)]
    plans = plan_sessions(scenario, ids)
    assert plans == plan_sessions(scenario, list(reversed(ids)))  # order of the population files does not matter
    assert len(plans) == 24 and len({p.key for p in plans}) == 24
    assert {len(p.agent_ids) for p in plans} == {4}
    groups = {p.group: p.agent_ids for p in plans}
    assert sorted(a for g in groups.values() for a in g) == sorted(ids)  # 3 disjoint groups of 4
    assert [p.key for p in plan_sessions(scenario, ids, limit=4)] == [
        "g1-food-delivery-r1", "g2-food-delivery-r1", "g3-food-delivery-r1", "g1-support-lines-r1"]  # fmt: skip
    with pytest.raises(ConfigurationError, match="groups of 4"):
        plan_sessions(scenario, ids[:3])


def test_a_small_population_wraps_around() -> None:
    scenario = load_scenario("brainstorming-average")  # 4 groups of 5 from 20 agents
    plans = plan_sessions(scenario, [f"p{i}" for i in range(12)])
    assert len(plans) == 40 and all(len(set(p.agent_ids)) == 5 for p in plans)
