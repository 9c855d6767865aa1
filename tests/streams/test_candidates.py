"""A worker holds more than one library and judge, selected per agent, each judge on its budget lane; the shadow
cache decides which running shadows sample a draft record."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from engine.judges.budget import GATE_LANE, SHADOW_LANE, JudgeBudget
from engine.judges.scripted import ScriptedJudge
from engine.library import PropositionLibrary
from engine.models import AgentConfig
from engine.settings import BUNDLED_PROPOSITIONS
from engine.shadow import Shadow, ShadowStatus
from streams.services.candidates import Candidates
from streams.services.shadow import Record, ShadowCache
from streams.wire.payloads import Draft


def candidates(made: list[str]) -> tuple[Candidates, JudgeBudget]:
    budget = JudgeBudget(4, 0.25, shadow_slots=1)
    own = ScriptedJudge.from_rules({"default": 9}, name="scripted:own")
    lanes = {lane: budget.judge(own, lane, 1.0) for lane in (GATE_LANE, SHADOW_LANE)}

    def make(spec: str) -> ScriptedJudge:
        made.append(spec)
        return ScriptedJudge.from_rules({"default": 3}, name=spec)

    return Candidates(PropositionLibrary(BUNDLED_PROPOSITIONS), lanes, make, budget, 1.0), budget


async def test_each_spec_and_tree_is_built_once_and_served_on_the_lane_asked() -> None:
    made: list[str] = []
    held, _ = candidates(made)
    config = AgentConfig(judge="scripted:candidate", propositions=str(BUNDLED_PROPOSITIONS))
    judge, library = held.pick(config, GATE_LANE)
    again, same = held.pick(config, GATE_LANE)
    assert judge is again and library is same and library is not held.default_library
    assert judge.name == "scripted:candidate" and made == ["scripted:candidate"]
    shadow_judge, _ = held.pick(config, SHADOW_LANE)
    assert shadow_judge is not judge and made == ["scripted:candidate"] * 2  # one per lane
    assert held.pick(AgentConfig(), GATE_LANE)[0].name == "scripted:own"
    assert held.library(None) is held.default_library


def test_a_candidate_that_cannot_be_built_falls_back_to_the_workers_own(tmp_path: Path) -> None:
    held, _ = candidates([])
    missing = tmp_path / "gone"
    assert held.library(str(missing)) is held.default_library
    from engine.errors import ConfigurationError

    def broken(spec: str) -> ScriptedJudge:
        raise ConfigurationError("no such file")

    held._make = broken
    assert held.judge("scripted:/gone.yaml", GATE_LANE).name == "scripted:own"


def test_the_cache_samples_running_covering_shadows_for_records_after_their_start() -> None:
    now = datetime.now(UTC)
    cache = ShadowCache()
    cache.replace([
        Shadow("all", "michael*", sample=1.0, created_at=now - timedelta(minutes=1)),
        Shadow("later", "michael*", sample=1.0, created_at=now + timedelta(minutes=1)),
        Shadow("stopped", "michael*", sample=1.0, status=ShadowStatus.STOPPED, created_at=now),
        Shadow("others", "dwight*", sample=1.0, created_at=now - timedelta(minutes=1)),
    ])  # fmt: skip
    draft = Draft(draft_id="d1", agent_id="michael-1", text="hello")
    record = Record("drafts", 0, 7, int(time.time() * 1000), b"{}")
    assert [s.shadow.name for s in cache.samples(draft, record)] == ["all"]
    assert [s.name for s in cache.running()] == ["all", "later", "others"]
