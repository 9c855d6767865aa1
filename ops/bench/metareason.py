"""MetaReason: sampling speed on the seed's complete example and the runner's own cost per variant.

Run from the repository root: ``.venv/bin/python -m ops.bench.metareason``. Merges into
``ops/bench/results.json``:

* ``metareason_sample_10k_s`` — sampling *and rendering* 10,000 variants of the benchmark's family
  (7 axes, LHS with maximin over 8 candidates, two stratifying axes), best of 5; target < 1 s.
* ``metareason_run_overhead_ms`` — per variant, a run of 2,000 variants (journal on, concurrency 8, summary
  included) minus the time the same target and judge take when called directly for the same variants; the
  target is an in-memory echo and the judge a scripted one, so the difference is the runner's own work
  (queueing, caching, oracle mapping, result models, the journal line, statistics); best of 3; target ≤ 2 ms.

The family is ``ops/bench/data/metareason-family.yaml``, in the repository, so the benchmark runs on a clone
anywhere; it has the shape of seed 002's complete example (on which the first figures were taken).
"""

from __future__ import annotations

import asyncio
import tempfile
import time
from pathlib import Path

from engine.formats.metareason import model as m
from engine.formats.metareason.custom import CustomOracles
from engine.formats.metareason.loader import read_family
from engine.formats.metareason.oracles import build_oracles
from engine.formats.metareason.runner import Runner
from engine.formats.metareason.sampling import variants
from engine.formats.targets import TargetAnswer, TargetRequest
from engine.judges.scripted import ScriptedJudge
from ops.bench.common import RESULTS_PATH, merge_results

FAMILY = Path(__file__).resolve().parent / "data" / "metareason-family.yaml"
RUN_VARIANTS = 2000


def bench_family() -> m.PromptFamily:
    """The benchmark's family, read from the repository (never from a folder beside it)."""
    return read_family(FAMILY, set())


class Echo:
    name = "echo (in memory)"

    async def answer(self, request: TargetRequest) -> TargetAnswer:
        return TargetAnswer(request.item_id, "Fact: the implications are documented.", self.name)


def sampling_seconds(family: m.PromptFamily) -> float:
    best = float("inf")
    for _ in range(5):
        started = time.perf_counter()
        produced = variants(family, 10_000)
        best = min(best, time.perf_counter() - started)
        assert len(produced) == 10_000
    return best


def judged(family: m.PromptFamily) -> m.PromptFamily:
    """The example with one llm_judge oracle (scripted) instead of oracles that need a network."""
    oracle = m.LlmJudgeOracle(type="llm_judge", rubric="addresses ISO 42001")
    return family.model_copy(update={"oracles": {"explainability": oracle}})


async def direct_seconds(family: m.PromptFamily, judge: ScriptedJudge) -> float:
    (oracle,) = build_oracles(family, judge=judge, embeddings=None, custom=CustomOracles({}))
    target, sample = Echo(), variants(family, RUN_VARIANTS)
    started = time.perf_counter()
    for variant in sample:
        answer = await target.answer(TargetRequest(variant.id, variant.prompt))
        await oracle.evaluate(variant, answer.text)
    return time.perf_counter() - started


async def run_seconds(family: m.PromptFamily, judge: ScriptedJudge, journal: Path) -> float:
    oracles = build_oracles(family, judge=judge, embeddings=None, custom=CustomOracles({}))
    runner = Runner(
        family, source="bench", target=Echo(), oracles=oracles, judge_name=judge.name, journal=journal, n=RUN_VARIANTS
    )
    started = time.perf_counter()
    run = await runner.run()
    elapsed = time.perf_counter() - started
    assert len(run.items) == RUN_VARIANTS and run.summary["oracles"]["explainability"]["n"] == RUN_VARIANTS
    return elapsed


def overhead_ms(family: m.PromptFamily, scratch: Path) -> tuple[float, float, float]:
    judge = ScriptedJudge.from_rules({"default": 7}, name="scripted:bench")
    best_run = best_direct = float("inf")
    for round_ in range(3):
        best_direct = min(best_direct, asyncio.run(direct_seconds(family, judge)))
        best_run = min(best_run, asyncio.run(run_seconds(family, judge, scratch / f"journal-{round_}.jsonl")))
    per = 1000.0 / RUN_VARIANTS
    return (best_run - best_direct) * per, best_run * per, best_direct * per


def main() -> None:
    with tempfile.TemporaryDirectory() as folder:
        scratch = Path(folder)
        family = bench_family()
        sample_s = sampling_seconds(family)
        overhead, total, direct = overhead_ms(judged(family), scratch)
    print(f"sampling + rendering 10,000 variants: {sample_s:.3f} s (target < 1 s)")
    print(f"run: {total:.3f} ms/variant, target + judge alone {direct:.3f} ms, overhead {overhead:.3f} ms (≤ 2 ms)")
    merge_results(
        RESULTS_PATH,
        {
            "metareason_sample_10k_s": round(sample_s, 4),
            "metareason_run_overhead_ms": round(overhead, 4),
            "metareason_run_total_ms": round(total, 4),
        },
    )


if __name__ == "__main__":
    main()
