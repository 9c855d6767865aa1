"""AgentV runner: bounded concurrency, per-case timeouts, target errors isolated to their case, and the
records and summaries a run produces."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from engine.formats.agentv import records, summary
from engine.formats.agentv.loader import load_eval_file
from engine.formats.agentv.model import EvalCase, EvaluatorSpec
from engine.formats.agentv.runner import RunOptions, run_cases
from engine.formats.targets import TargetAnswer, TargetError, TargetRequest, ToolCall
from tests.peers import peer, require

TRAJ = EvaluatorSpec("t", "tool_trajectory", config={"mode": "any_order"}, minimums={"lookup": 1})


def cases(n: int) -> list[EvalCase]:
    return [EvalCase(f"c{i}", "o", ({"role": "user", "content": f"q{i}"},), evaluators=(TRAJ,)) for i in range(n)]


class GatedTarget:
    """Holds every answer until ``workers`` answers are in flight at once, recording the peak."""

    name = "gated"

    def __init__(self, workers: int) -> None:
        self.workers = workers
        self.in_flight = 0
        self.peak = 0
        self.full = asyncio.Event()

    async def answer(self, request: TargetRequest) -> TargetAnswer:
        self.in_flight += 1
        self.peak = max(self.peak, self.in_flight)
        if self.in_flight >= self.workers:
            self.full.set()
        await self.full.wait()
        self.in_flight -= 1
        return TargetAnswer(request.item_id, f"answer {request.prompt}", self.name, (ToolCall("lookup"),))


async def test_at_most_workers_cases_run_at_once_and_order_is_kept() -> None:
    target = GatedTarget(workers=3)
    outcomes = await run_cases(cases(10), target, None, RunOptions(workers=3))
    assert target.peak == 3
    assert [o.case.id for o in outcomes] == [f"c{i}" for i in range(10)]
    assert all(o.score == 1.0 and o.verdict == "pass" for o in outcomes)


class SometimesTarget:
    name = "sometimes"

    def __init__(self) -> None:
        self.never = asyncio.Event()

    async def answer(self, request: TargetRequest) -> TargetAnswer:
        if request.item_id == "c1":
            raise TargetError("no recorded answer for id 'c1'")
        if request.item_id == "c2":
            await self.never.wait()
        return TargetAnswer(request.item_id, "a", self.name, (ToolCall("lookup"),))


async def test_a_failing_or_hanging_target_errors_only_its_case() -> None:
    outcomes = await run_cases(cases(4), SometimesTarget(), None, RunOptions(workers=4, case_timeout_s=0.2))
    assert [(o.case.id, o.score, o.verdict) for o in outcomes] == [
        ("c0", 1.0, "pass"),
        ("c1", 0.0, "fail"),
        ("c2", 0.0, "fail"),
        ("c3", 1.0, "pass"),
    ]
    assert outcomes[1].error == "target sometimes: no recorded answer for id 'c1'"
    assert outcomes[2].error == "case timed out after 0.2s"
    stats = summary.summarise(outcomes)
    assert (stats["mean"], stats["median"], stats["min"], stats["max"]) == (0.5, 0.5, 0.0, 1.0)
    assert stats["sd"] == pytest.approx(0.5)
    assert [b["count"] for b in stats["histogram"]] == [2, 0, 0, 0, 2]
    assert [e["eval_id"] for e in stats["errors"]] == ["c1", "c2"]
    assert [t["eval_id"] for t in stats["top"]] == ["c0", "c3", "c1"]
    assert [t["eval_id"] for t in stats["bottom"]] == ["c2", "c1", "c3"]


CORPUS = peer("corpus", "agentv")


async def test_records_use_upstreams_field_names() -> None:
    baseline = (
        CORPUS / "valid" / "examples" / "features" / "tool-trajectory-simple" / "evals" / "dataset.baseline.jsonl"
    )
    require(baseline)
    import orjson

    upstream = orjson.loads(baseline.read_text().splitlines()[0])
    outcome = (await run_cases(cases(1), GatedTarget(1), None))[0]
    ours = records.case_record(outcome, "gated", "none")
    shared = {
        "timestamp",
        "eval_id",
        "dataset",
        "score",
        "hits",
        "misses",
        "candidate_answer",
        "target",
        "lm_provider_request",
        "evaluator_results",
        "trace_summary",
    }
    assert shared <= set(upstream) and shared <= set(ours)
    assert set(upstream["evaluator_results"][0]) <= set(ours["evaluator_results"][0])
    assert set(upstream["trace_summary"]) - {"duration_ms"} <= set(ours["trace_summary"])
    index = records.index_record(outcome)
    assert index == {
        "test_id": "c0",
        "dataset": "",
        "score": 1.0,
        "execution_status": "ok",
        "scores": [{"name": "t", "type": "tool-trajectory", "score": 1.0, "weight": 1.0, "verdict": "pass"}],
    }


def test_compare_counts_wins_losses_and_ties() -> None:
    result = summary.compare(
        {"a": 0.5, "b": 0.9, "c": 0.7, "old": 1.0}, {"a": 0.7, "b": 0.7, "c": 0.75, "new": 0.0}, 0.1
    )
    assert [(r[0], r[4]) for r in result.rows] == [("a", "win"), ("b", "loss"), ("c", "tie")]
    assert result.counts() == {"win": 1, "loss": 1, "tie": 1}
    assert (result.only_a, result.only_b) == (("old",), ("new",))
    assert result.mean_delta == pytest.approx(0.05 / 3)


async def test_a_seed_file_and_its_4x_translation_score_the_same(tmp_path: Path) -> None:
    tmp_path.chmod(0o755)  # code judges run as a stranger to the files: pytest's folders are closed to others
    (tmp_path / "judge.py").write_text(
        "import json, sys\nc = json.load(sys.stdin)\nanswer = c.get('candidate_answer') or ''\n"
        "print(json.dumps({'score': 1.0 if 'beet' in answer else 0.2, 'hits': [], 'misses': []}))\n"
    )
    seed = tmp_path / "seed.yaml"
    seed.write_text(
        "evalcases:\n"
        "  - id: beets\n    expected_outcome: Mentions beets\n    input_messages: [{role: user, content: 'Weekend?'}]\n"
        "    execution:\n      evaluators:\n"
        "        - {name: code, type: code_judge, script: [python3, judge.py], weight: 2}\n"
        "        - {name: traj, type: tool_trajectory, mode: in_order, expected: [{tool: lookup}, {tool: book}]}\n"
        "        - {name: unused, type: tool_trajectory, mode: exact, expected: [{tool: x}], weight: 0}\n"
    )
    modern = tmp_path / "modern.eval.yaml"
    modern.write_text(
        "tests:\n"
        "  - id: beets\n    criteria: Mentions beets\n    input: Weekend?\n    assertions:\n"
        "      - {name: code, type: code-grader, command: [python3, judge.py], weight: 2}\n"
        "      - {name: traj, type: tool-trajectory, mode: in_order, expected: [{tool: lookup}, {tool: book}]}\n"
        "      - {name: unused, type: tool-trajectory, mode: exact, expected: [{tool: x}], weight: 0}\n"
    )
    scores = []
    for path in (seed, modern):
        loaded, issues = load_eval_file(path)
        assert issues == [] and loaded is not None
        outcome = (await run_cases(loaded.cases, GatedTarget(1), None))[0]
        scores.append((outcome.score, [(r.name, r.score, r.weight) for r in outcome.results]))
    assert scores[0] == scores[1]
    assert scores[0][0] == pytest.approx((2 * 0.2 + 0.5) / 3)
