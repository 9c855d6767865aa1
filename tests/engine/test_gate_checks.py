"""The gate's checks of one attempt: parallel dimensions with deadlines, fail-open judge errors, similarity."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any

import pytest

from engine.checks import prepare
from engine.errors import JudgeOutputError
from engine.gate import decide, run_checks
from engine.judges.base import JudgeRequest, JudgeResult
from engine.judges.scripted import ScriptedJudge
from engine.models import AgentConfig, Dimension, Event, Outcome
from engine.propositions import Proposition, PropositionSet
from engine.scoring import ScoringTarget
from tests.engine.conftest import ConfigFactory

PsetFactory = Callable[..., dict[Dimension, PropositionSet]]


@pytest.fixture
def make_psets() -> PsetFactory:
    """make_psets(*dimensions): one proposition ``<dimension>-p`` per dimension, with a recommendation."""

    def make(*dimensions: Dimension) -> dict[Dimension, PropositionSet]:
        chosen = dimensions or (Dimension.ADHERENCE, Dimension.FLUENCY)
        return {
            d: PropositionSet(
                dimension=d,
                agent_id="michael",
                propositions=(
                    Proposition(
                        id=f"{d.value}-p",
                        claim="{{agent_name}} says {{action}} well",
                        recommendations_for_improvement=f"improve your {d.value}",
                    ),
                ),
            )
            for d in chosen
        }

    return make


@pytest.fixture
def target() -> ScoringTarget:
    return ScoringTarget(
        target_name="Michael Scott",
        agent_id="michael",
        events=(Event("michael", "Michael Scott", "Hello everyone"),),
        action="the cat sat on the mat",
    )


def scripted(*rules: Mapping[str, Any], default: int = 9) -> ScriptedJudge:
    return ScriptedJudge.from_rules({"default": default, "rules": list(rules)})


# --- run_checks -----------------------------------------------------------------------------------------


def _slow_rules(delay: float = 0.05) -> ScriptedJudge:
    return scripted(
        {"proposition": "adherence-*", "value": 8, "delay_s": delay},
        {"proposition": "fluency-*", "value": 8, "delay_s": delay},
    )


class OrderRecorder:
    """Wraps a judge and records when each call starts and ends, so tests assert overlap by order, not time."""

    def __init__(self, inner: ScriptedJudge) -> None:
        self.inner = inner
        self.events: list[tuple[str, str]] = []

    @property
    def name(self) -> str:
        return self.inner.name

    async def evaluate(self, request: JudgeRequest) -> JudgeResult:
        claim = request.claims[0].id
        self.events.append(("start", claim))
        try:
            return await self.inner.evaluate(request)
        finally:
            self.events.append(("end", claim))


class ShareRecorder(OrderRecorder):
    """Also records which requests asked for their evidence to be cached."""

    def __init__(self, inner: ScriptedJudge) -> None:
        super().__init__(inner)
        self.shared: dict[str, bool] = {}

    async def evaluate(self, request: JudgeRequest) -> JudgeResult:
        self.shared[request.claims[0].id] = request.share_history
        return await super().evaluate(request)


async def test_staged_dimensions_wait_for_a_leader_that_reads_the_persona(
    make_psets: PsetFactory, make_config: ConfigFactory, target: ScoringTarget
) -> None:
    judge = ShareRecorder(scripted({"proposition": "*", "value": 8, "delay_s": 0.02}))
    psets = make_psets(Dimension.ADHERENCE, Dimension.CONSISTENCY, Dimension.FLUENCY, Dimension.SUITABILITY)
    for d in (Dimension.ADHERENCE, Dimension.CONSISTENCY):  # no persona: the leader is the first that has one
        psets[d] = psets[d].model_copy(update={"include_personas": False})
    config = make_config(gate_adherence_enabled=True, gate_consistency_enabled=True, gate_fluency_enabled=True,
                         gate_suitability_enabled=True)  # fmt: skip
    with_prior = ScoringTarget("Michael Scott", "michael", events=(Event("michael", "Michael Scott", "Hi"),),
                               action="the cat sat on the mat")  # fmt: skip
    result = await run_checks(judge, psets, with_prior, config, attempt=1, recent=[], share_prefix=True)
    events = judge.events
    # every dimension shares the evidence and the draft: fluency (persona) leads, the others start after it
    assert events[:2] == [("start", "fluency-p"), ("end", "fluency-p")]
    assert {claim for kind, claim in events[2:] if kind == "start"} == {"adherence-p", "consistency-p", "suitability-p"}
    assert judge.shared == {"adherence-p": True, "fluency-p": True, "suitability-p": True, "consistency-p": True}
    assert all(c.score == 8 and not c.timed_out for c in result.checks)


async def test_one_staged_dimension_has_nobody_to_share_with(
    make_psets: PsetFactory, make_config: ConfigFactory, target: ScoringTarget
) -> None:
    judge = ShareRecorder(scripted())
    psets = make_psets(Dimension.FLUENCY)
    await run_checks(judge, psets, target, make_config(gate_adherence_enabled=False), attempt=1, recent=[],
                     share_prefix=True)  # fmt: skip
    assert judge.shared == {"fluency-p": False}


class WindowRecorder(ShareRecorder):
    """Also records the window each request was rendered with: (events shown, omitted)."""

    def __init__(self, inner: ScriptedJudge) -> None:
        super().__init__(inner)
        self.windows: list[tuple[int, int]] = []

    async def evaluate(self, request: JudgeRequest) -> JudgeResult:
        self.windows.append((len(request.trajectory), request.omitted))
        return await super().evaluate(request)


@pytest.mark.parametrize(("hopping", "window"), [(False, (15, 15)), (True, (20, 10))])
async def test_the_gate_judges_on_the_window_it_is_given(
    make_psets: PsetFactory, make_config: ConfigFactory, hopping: bool, window: tuple[int, int]
) -> None:
    judge = WindowRecorder(scripted())
    events = tuple(Event("jim", "Jim Halpert", f"message {i}") for i in range(30))
    target = ScoringTarget("Michael Scott", "michael", events=events, action="the cat sat on the mat")
    await run_checks(judge, make_psets(), target, make_config(), attempt=1, recent=[], hopping=hopping)
    assert judge.windows == [window, window]  # first 5 + last 10 of 30; first 5 + the 15 after 10 omitted


async def test_dimensions_are_judged_in_parallel(
    make_psets: PsetFactory, make_config: ConfigFactory, target: ScoringTarget
) -> None:
    judge = OrderRecorder(_slow_rules())
    result = await run_checks(judge, make_psets(), target, make_config(), attempt=1, recent=[])
    assert [kind for kind, _ in judge.events] == ["start", "start", "end", "end"]  # both in flight at once
    assert [c.dimension for c in result.checks] == [Dimension.ADHERENCE, Dimension.FLUENCY]
    assert all(c.passed and not c.timed_out and c.score == 8 for c in result.checks)
    assert judge.inner.log.count() == 2 == result.judge_calls


async def test_dimensions_run_in_turn_when_not_parallel(
    make_psets: PsetFactory, make_config: ConfigFactory, target: ScoringTarget
) -> None:
    judge = OrderRecorder(_slow_rules())
    result = await run_checks(judge, make_psets(), target, make_config(), attempt=1, recent=[], parallel=False)
    assert judge.events == [
        ("start", "adherence-p"), ("end", "adherence-p"), ("start", "fluency-p"), ("end", "fluency-p"),
    ]  # fmt: skip
    assert len(result.checks) == 2 and result.passed


async def test_a_dimension_past_its_deadline_passes_as_timed_out(
    make_psets: PsetFactory, make_config: ConfigFactory, target: ScoringTarget
) -> None:
    judge = scripted(
        {"proposition": "adherence-*", "value": 1, "delay_s": 2.0}, {"proposition": "fluency-*", "value": 3}
    )
    started = time.perf_counter()
    result = await run_checks(judge, make_psets(), target, make_config(), attempt=1, recent=[], deadline_s=0.1)
    assert time.perf_counter() - started < 1.0  # the slow judge is not awaited
    adherence, fluency = result.checks
    assert adherence.timed_out and adherence.passed and adherence.error is None
    assert not fluency.timed_out and not fluency.passed and fluency.score == 3
    assert fluency.recommendations == ("improve your fluency",)


class BrokenJudge:
    """A judge whose every answer is malformed."""

    name = "broken"

    async def evaluate(self, request: JudgeRequest) -> JudgeResult:
        raise JudgeOutputError("the judge answered 'eleven' instead of a score")


async def test_a_judge_error_fails_open_and_is_recorded(
    make_psets: PsetFactory, make_config: ConfigFactory, target: ScoringTarget
) -> None:
    result = await run_checks(BrokenJudge(), make_psets(), target, make_config(), attempt=1, recent=[])
    assert result.passed
    for check in result.checks:
        assert check.passed
        assert check.error is not None and "eleven" in check.error
    assert decide(result, [], make_config()).outcome is Outcome.TIMEOUT_PASS_THROUGH


async def test_thresholds_are_per_dimension(
    make_psets: PsetFactory, make_config: ConfigFactory, target: ScoringTarget
) -> None:
    config = make_config(gate_adherence_threshold=5.0, gate_fluency_threshold=7.0)
    result = await run_checks(scripted(default=6), make_psets(), target, config, attempt=1, recent=[])
    assert [(c.dimension, c.passed, c.threshold) for c in result.checks] == [
        (Dimension.ADHERENCE, True, 5.0),
        (Dimension.FLUENCY, False, 7.0),
    ]


async def test_only_enabled_dimensions_with_propositions_are_judged(
    make_psets: PsetFactory, target: ScoringTarget
) -> None:
    psets = make_psets(Dimension.ADHERENCE, Dimension.FLUENCY)
    psets[Dimension.FLUENCY] = PropositionSet(dimension=Dimension.FLUENCY)  # enabled, but empty
    config = AgentConfig(gate_fluency_enabled=True, gate_suitability_enabled=True)  # suitability: no set
    judge = scripted()
    result = await run_checks(judge, psets, target, config, attempt=1, recent=[])
    assert result.checks == () and judge.log.count() == 0 and result.passed


@pytest.mark.parametrize(
    ("recent", "passes", "score"),
    [
        (["Cat, sat... MAT!"], False, 1.0),  # case and punctuation do not count
        (["cat sat mat dog bird"], False, 0.6),  # 3 shared of 5 distinct words: exactly the threshold fails
        (["cat sat dog bird"], True, 0.4),
        ([], True, 0.0),
    ],
)
async def test_similarity_fails_at_the_threshold(recent: list[str], passes: bool, score: float) -> None:
    config = AgentConfig(gate_similarity_enabled=True, max_action_similarity=0.6)
    draft = ScoringTarget(target_name="M", action="cat sat mat")
    texts = ["unrelated words entirely", *recent]
    result = await run_checks(scripted(), {}, draft, config, attempt=1, recent=[prepare(t) for t in texts])
    assert result.similarity is not None
    assert result.similarity.passed is passes and result.passed is passes
    assert result.similarity.score == pytest.approx(score)
    assert result.similarity.most_similar == (recent[0] if recent else None)


async def test_similarity_names_the_most_similar_recent_message(target: ScoringTarget) -> None:
    config = AgentConfig(gate_similarity_enabled=True)
    recent = [prepare(t) for t in ("the cat is here", "the cat sat on the mat today", "a dog barked")]
    result = await run_checks(scripted(), {}, target, config, attempt=1, recent=recent)
    assert result.similarity is not None
    assert result.similarity.most_similar == "the cat sat on the mat today"
    assert not result.similarity.passed
