"""Shadow gating's pure core: sampling, coverage, the candidate's configuration, validation, budget accounting,
and the shadows' own lane of the judge budget."""

from __future__ import annotations

import asyncio

import pytest

from engine.errors import ConfigurationError
from engine.judges.budget import GATE_LANE, SHADOW_LANE, JudgeBudget
from engine.models import AgentConfig, TokenUsage
from engine.shadow import Shadow, Spend, check_limits, check_name, check_pattern, check_settings, sampled, tokens_of


def test_sampling_is_a_deterministic_function_of_the_name_and_the_draft() -> None:
    drafts = [f"draft-{i}" for i in range(4000)]
    first = [d for d in drafts if sampled("strict", d, 0.2)]
    assert first == [d for d in drafts if sampled("strict", d, 0.2)]  # a redelivery samples the same way
    assert 0.17 < len(first) / len(drafts) < 0.23
    assert first != [d for d in drafts if sampled("other", d, 0.2)]  # shadows sample independently
    assert set(first) <= {d for d in drafts if sampled("strict", d, 0.5)}  # a higher rate keeps the lower's
    assert all(sampled("strict", d, 1.0) for d in drafts[:50])


def test_a_shadow_covers_its_glob_and_applies_its_keys_over_the_live_configuration() -> None:
    shadow = Shadow("s", "michael*", judge="scripted:/x.yaml", settings={"gate_adherence_threshold": 8.0})
    assert shadow.covers("michael-2") and not shadow.covers("dwight")
    live = AgentConfig(gate_adherence_enabled=True, gate_adherence_threshold=5.0)
    candidate = shadow.candidate_config(live)
    assert candidate.gate_adherence_enabled and candidate.gate_adherence_threshold == 8.0
    assert candidate.judge == "scripted:/x.yaml" and candidate.propositions is None
    assert Shadow("s", "*").candidate_config(live) is live


@pytest.mark.parametrize(
    ("check", "message"),
    [
        (lambda: check_name("no spaces"), "invalid shadow name"),
        (lambda: check_pattern(""), "invalid agent pattern"),
        (lambda: check_pattern("a b"), "invalid agent pattern"),
        (lambda: check_settings("s", {"gate_adherence_treshold": 7}), "unknown configuration key"),
        (lambda: check_settings("s", {"gate_adherence_threshold": 10}), "invalid configuration for shadow s"),
        (lambda: check_settings("s", {"judge": "offline"}), "give 'judge' with --judge"),
        (lambda: check_limits(0, None, None), "--sample"),
        (lambda: check_limits(0.5, 1.0, 10), "not both"),
        (lambda: check_limits(0.5, None, 0), "--max-tokens"),
        (lambda: check_limits(0.5, -1.0, None), "--budget-usd"),
    ],
)
def test_bad_inputs_are_one_configuration_error(check: object, message: str) -> None:
    with pytest.raises(ConfigurationError, match=message.replace("(", r"\(")):
        check()  # type: ignore[operator]


def test_valid_inputs_pass() -> None:
    assert check_name("strict-1.v2") == "strict-1.v2" and check_pattern("mich[ae]el-*") == "mich[ae]el-*"
    assert check_settings("s", {"gate_adherence_threshold": 7}) == {"gate_adherence_threshold": 7}
    check_limits(1.0, None, 100)


def test_a_budget_is_spent_once_a_limit_is_reached() -> None:
    spend = Spend()
    usage = TokenUsage(input_tokens=90, output_tokens=10)
    assert tokens_of(usage) == 100
    for _ in range(2):
        spend.add(usage, 0.001)
        assert not spend.exhausted(None, 250)
    spend.add(usage, None)  # an unknown price adds no dollars
    assert spend.tokens == 300 and spend.exhausted(None, 250)
    assert spend.usd == pytest.approx(0.002) and not spend.exhausted(0.01, None) and spend.exhausted(0.002, None)
    assert not spend.exhausted(None, None)


async def test_the_shadows_lane_never_takes_a_slot_the_gate_could_use() -> None:
    budget = JudgeBudget(4, 0.25, shadow_slots=2)
    shadows, gate = budget.lanes[SHADOW_LANE], budget.lanes[GATE_LANE]
    for _ in range(2):
        await budget.acquire(shadows)
    held = [asyncio.ensure_future(budget.acquire(shadows))]  # a third shadow call waits: the lane is at its cap
    for _ in range(4):  # the gate still gets every slot of the shared total at once
        await asyncio.wait_for(budget.acquire(gate), 0.5)
    assert gate.in_flight == 4 and shadows.in_flight == 2 and not held[0].done()
    budget.release(shadows)
    await asyncio.wait_for(held[0], 0.5)
    assert shadows.in_flight == 2
