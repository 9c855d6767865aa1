"""Running families: known pass rates through a scripted judge, oracles, caching, concurrency, resuming."""

from __future__ import annotations

import asyncio
from pathlib import Path

import orjson
import pytest
from scipy import stats

from engine.actors.base import ActRequest, ActResult
from engine.errors import ConfigurationError
from engine.formats.metareason import model as m
from engine.formats.metareason.custom import CustomOracles
from engine.formats.metareason.embeddings import OpenAICompatibleEmbeddings, ScriptedHashingEmbeddings
from engine.formats.metareason.loader import read_family
from engine.formats.metareason.oracles import build_oracles, similarity_of
from engine.formats.metareason.runner import Runner
from engine.formats.metareason.sampling import variants
from engine.formats.results import FormatRun
from engine.formats.targets import RecordedTarget, Target, TargetAnswer, TargetError, TargetRequest, parse_target
from engine.judges.llm import CallPolicy
from engine.judges.openai_compat import OpenAICompatibleJudge
from engine.judges.scripted import ScriptedJudge
from engine.models import Persona
from ops.fakes.chat_completions import ChatCompletionsServer
from ops.fakes.embeddings import EmbeddingsServer
from ops.fakes.server import Behaviour

HEAD = """\
prompt_id: fam
prompt_template: "{{ who }} asks about {{ topic }}"
schema:
  who:
    type: categorical
    values: [Jim, Pam]
  topic:
    type: categorical
    values: [beets, paper, bears]
n_variants: 100
statistical_config:
  output: {credible_interval: 0.9, hdi_method: central}
"""
JUDGED = HEAD + "oracles:\n  in_character:\n    type: llm_judge\n    rubric: stays Dwight\n"
#: every variant distinct (a continuous axis in the prompt)
UNIQUE = JUDGED.replace("{{ topic }}", "{{ topic }} {{ x }}").replace(
    "n_variants:", "  x:\n    type: uniform\n    min: 0\n    max: 1\nn_variants:"
)


def _family(tmp_path: Path, text: str = JUDGED) -> m.PromptFamily:
    path = tmp_path / "fam.yaml"
    path.write_text(text)
    return read_family(path, {"Shouty"})


def _recorded(tmp_path: Path, family: m.PromptFamily, breaks: set[int], skip: frozenset[int] = frozenset()) -> Path:
    path = tmp_path / "answers.jsonl"
    lines = [
        orjson.dumps({"id": v.id, "answer": "As an AI, sure!" if v.index in breaks else "Fact: bears eat beets."})
        for v in variants(family)
        if v.index not in skip
    ]
    path.write_bytes(b"\n".join(lines) + b"\n")
    return path


def _judge() -> ScriptedJudge:
    rules = {"default": 6, "rules": [{"proposition": "in_character", "message_contains": "as an ai", "value": False}]}
    return ScriptedJudge.from_rules(rules, name="scripted:test")


async def _run(
    family: m.PromptFamily, target: Target, *, concurrency: int = 8, journal: Path | None = None
) -> FormatRun:
    oracles = build_oracles(family, judge=_judge(), embeddings=ScriptedHashingEmbeddings(), custom=CustomOracles({}))
    runner = Runner(
        family,
        source="fam.yaml",
        target=target,
        oracles=oracles,
        judge_name="scripted:test",
        concurrency=concurrency,
        journal=journal,
    )
    return await runner.run()


async def test_a_known_pass_rate_gives_the_exact_k_of_n_and_interval(tmp_path: Path) -> None:
    family = _family(tmp_path)
    breaks = set(range(0, 100, 4))  # 25 of 100 break character
    run = await _run(family, RecordedTarget(_recorded(tmp_path, family, breaks)))
    entry = run.summary["oracles"]["in_character"]
    assert (entry["k"], entry["n"], entry["errors"]) == (75, 100, 0)
    assert entry["posterior"] == {"alpha": 76.0, "beta": 26.0}
    assert entry["interval"]["low"] == stats.beta.ppf(0.05, 76, 26)
    assert entry["interval"]["high"] == stats.beta.ppf(0.95, 76, 26)
    assert entry["mean"] == pytest.approx(76 / 102)
    assert run.status == "completed" and run.judge == "scripted:test"
    by_who = {g["value"]: (g["k"], g["n"]) for g in entry["by_axis"]["who"]}
    broken = [v for v in variants(family) if v.index in breaks]
    assert sum(n for _, n in by_who.values()) == 100
    assert by_who["Jim"][1] - by_who["Jim"][0] == sum(1 for v in broken if v.params["who"] == "Jim")


async def test_score_and_structured_outputs(tmp_path: Path) -> None:
    text = HEAD + (
        "oracles:\n  voice:\n    type: llm_judge\n    rubric: how Dwight\n    output_format: score\n"
        "    threshold: 0.7\n  detail:\n    type: llm_judge\n    output_format: structured\n"
        "    rubric: |\n      1. curt\n      2. certain\n      3. mentions beets\n"
    )
    family = _family(tmp_path, text)
    rules = {"default": 6, "rules": [{"proposition": "detail.3", "value": False}]}
    judge = ScriptedJudge.from_rules(rules)
    oracles = build_oracles(family, judge=judge, embeddings=None, custom=CustomOracles({}))
    variant = variants(family, 1)[0]
    voice, detail = [await o.evaluate(variant, "Fact.") for o in oracles]
    assert voice.score == pytest.approx(6 / 9)
    assert (voice.passed, voice.details["value"]) == (False, 6)
    assert detail.score == pytest.approx(2 / 3) and detail.passed is True
    assert detail.details["criteria"] == {"curt": True, "certain": True, "mentions beets": False}
    assert [len(r.claims) for r in judge.log.calls] == [1, 3]  # structured: one batched call


async def test_an_unparseable_judge_answer_is_a_recorded_failure(tmp_path: Path) -> None:
    family = _family(tmp_path)
    async with ChatCompletionsServer(default=Behaviour.malformed("looks fine, maybe 7")) as server:
        judge = OpenAICompatibleJudge(base_url=server.base_url, model="fake", policy=CallPolicy(deadline_s=10))
        oracles = build_oracles(family, judge=judge, embeddings=None, custom=CustomOracles({}))
        score = await oracles[0].evaluate(variants(family, 1)[0], "Fact.")
        await judge.aclose()
    assert score.passed is False and score.verdict == "error" and score.score is None
    assert score.error is not None and "unusable answer after one repair turn" in score.error
    assert len(server.requests) == 2  # the answer and one repair turn


async def test_embedding_similarity_through_an_openai_compatible_endpoint(tmp_path: Path) -> None:
    text = HEAD + (
        "oracles:\n  close:\n    type: embedding_similarity\n    canonical_answer: bears eat beets\n"
        "    threshold: 0.8\n"
        "  far:\n    type: embedding_similarity\n    canonical_answer: bears eat beets\n    method: euclidean\n"
        "    threshold: 0.8\n    embedding_model: small\n"
    )
    family = _family(tmp_path, text)
    async with EmbeddingsServer([Behaviour.rate_limited()]) as server:
        client = OpenAICompatibleEmbeddings(server.base_url)
        close, far = build_oracles(family, judge=None, embeddings=client, custom=CustomOracles({}))
        variant = variants(family, 1)[0]
        same = await close.evaluate(variant, "Bears eat beets!")
        other = await far.evaluate(variant, "paper sales are up")
        again = await close.evaluate(variant, "bears eat paper")
        await client.aclose()
    assert same.score == pytest.approx(1.0) and same.passed
    assert other.score == pytest.approx(1 - 2**0.5 / 2) and not other.passed  # orthogonal: distance sqrt(2)
    assert again.score == pytest.approx(2 / 3)
    assert [r.body["model"] for r in server.requests][:2] == ["text-embedding-3-small"] * 2  # 429, then retried
    canonical = [r for r in server.requests if r.body["input"] == ["bears eat beets"]]
    assert len(canonical) == 3  # close: 429 + success, far: once; reused afterwards


def test_similarity_rejects_mismatched_dimensions() -> None:
    with pytest.raises(ValueError, match="dimensions differ"):
        similarity_of([1.0], [1.0, 0.0], "cosine_similarity")


class _Counting:
    """A target that counts calls and the most calls in flight at once."""

    def __init__(self, fail: set[str] | None = None) -> None:
        self.calls: list[str] = []
        self.in_flight = 0
        self.most = 0
        self.fail = fail or set()

    @property
    def name(self) -> str:
        return "counting"

    async def answer(self, request: TargetRequest) -> TargetAnswer:
        self.calls.append(request.item_id)
        self.in_flight += 1
        self.most = max(self.most, self.in_flight)
        for _ in range(5):
            await asyncio.sleep(0)
        self.in_flight -= 1
        if request.item_id in self.fail:
            raise TargetError(f"no answer for {request.item_id}")
        return TargetAnswer(request.item_id, "Fact: bears eat beets.", self.name)


async def test_duplicate_prompts_are_answered_once_and_concurrency_is_bounded(tmp_path: Path) -> None:
    family = _family(tmp_path)
    target = _Counting()
    run = await _run(family, target, concurrency=3)
    assert len(target.calls) == 6  # 2 x 3 distinct prompts among 100 variants
    assert run.summary["cached_answers"] == 94
    unique = _family(tmp_path, UNIQUE)
    target = _Counting()
    await _run(unique, target, concurrency=3)
    assert len(target.calls) == 100 and target.most == 3


async def test_target_errors_leave_the_oracle_n_and_a_rerun_resumes(tmp_path: Path) -> None:
    family = _family(tmp_path)
    every = variants(family)
    failing = {v.id for v in every[:10]}
    journal = tmp_path / "run.jsonl"
    first = await _run(family, _Counting(fail=failing), journal=journal)
    assert first.status == "partial" and first.summary["target_errors"] == 10
    assert first.summary["oracles"]["in_character"]["n"] == 90
    with journal.open("ab") as handle:
        handle.write(b'{"run_id": "torn')  # a crash mid-line
    target = _Counting()
    second = await _run(family, target, journal=journal)
    assert second.run_id == first.run_id and second.status == "completed"
    assert second.summary["resumed"] == 90 and second.summary["oracles"]["in_character"]["n"] == 100
    assert set(target.calls) <= failing and len(second.items) == 100


async def test_calibration_compares_the_success_rate_with_the_expectation(tmp_path: Path) -> None:
    text = (
        JUDGED + "  confidence:\n    type: statistical_calibration\n    expected_confidence: 0.8\n    tolerance: 0.05\n"
    )
    family = _family(tmp_path, text)
    run = await _run(family, RecordedTarget(_recorded(tmp_path, family, set(range(0, 100, 4)))))
    calibration = run.summary["oracles"]["confidence"]["calibration"]
    assert calibration["observed"] == pytest.approx(76 / 102)
    assert calibration["calibrated"] is False  # |0.745 - 0.8| > 0.05
    expected = stats.beta.cdf(0.85, 76, 26) - stats.beta.cdf(0.75, 76, 26)
    assert calibration["probability_within_tolerance"] == pytest.approx(expected)


class _Shouty:
    def __init__(self, config: object) -> None:
        self.config = config

    async def evaluate(self, answer: str, context: object) -> tuple[float, dict[str, object]]:
        return (1.0 if answer.isupper() else 0.0), {"config": self.config}


async def test_custom_oracles_come_from_the_registry_only(tmp_path: Path) -> None:
    text = (
        HEAD + "oracles:\n  shout:\n    type: custom\n    module: not.imported\n    class: Shouty\n    config: {x: 1}\n"
    )
    family = _family(tmp_path, text)
    with pytest.raises(ConfigurationError, match="'Shouty' is not registered"):
        build_oracles(family, judge=None, embeddings=None, custom=CustomOracles({}))
    (oracle,) = build_oracles(family, judge=None, embeddings=None, custom=CustomOracles({"Shouty": _Shouty}))
    loud = await oracle.evaluate(variants(family, 1)[0], "FACT.")
    assert (loud.score, loud.passed, loud.details["config"]) == (1.0, True, {"x": 1})


def test_custom_oracles_are_found_through_entry_points(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "acme_oracles.py").write_text(
        "class Loud:\n    def __init__(self, config):\n        self.config = config\n"
        "    async def evaluate(self, answer, context):\n        return 0.5\n"
    )
    info = tmp_path / "acme_oracles-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: acme-oracles\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[persona_drift.metareason_oracles]\nLoud = acme_oracles:Loud\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    registry = CustomOracles.installed()
    assert "Loud" in registry.names()
    assert type(registry.build("Loud", {})).__name__ == "Loud"


async def test_a_journal_of_another_design_is_not_resumed(tmp_path: Path) -> None:
    family = _family(tmp_path, UNIQUE)
    journal = tmp_path / "run.jsonl"
    first = await _run(family, _Counting(), journal=journal)
    other = family.model_copy(update={"sampling": family.sampling.model_copy(update={"random_seed": 1})})
    target = _Counting()
    second = await _run(other, target, journal=journal)
    assert second.run_id != first.run_id and second.summary["resumed"] == 0
    assert len(target.calls) == 100


class _FakeActor:
    """Answers as the persona it is given (a test double for the simulations' actors)."""

    name = "fake-actor"

    def __init__(self) -> None:
        self.requests: list[ActRequest] = []

    async def act(self, request: ActRequest) -> ActResult:
        self.requests.append(request)
        who = request.persona.name if request.persona else request.agent_id
        return ActResult(f"{who}: Fact. {request.stimulus}", self.name)


async def test_actor_targets_answer_through_the_actor_with_the_persona(tmp_path: Path) -> None:
    family = _family(tmp_path)
    actor = _FakeActor()
    persona = Persona(id="dwight", name="Dwight Schrute")
    target = parse_target("actor:dwight", cwd=tmp_path, resolve_actor=lambda agent: (actor, persona))
    run = await _run(family, target)
    assert len(actor.requests) == 6  # one per distinct prompt
    assert {r.agent_id for r in actor.requests} == {"dwight"} and all(r.persona is persona for r in actor.requests)
    first = run.items[0]
    assert first.answer == f"Dwight Schrute: Fact. {first.details['prompt']}"
    assert run.target == "actor:dwight (fake-actor)"
