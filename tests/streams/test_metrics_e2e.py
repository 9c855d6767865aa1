"""End-to-end: a worker's /stats and /metrics pages agree with the verdicts it produced.

One worker serves the module and sees only this module's traffic, so every aggregate can be recomputed from
the verdicts the client received.
"""

from __future__ import annotations

import asyncio
import re
import statistics
import uuid
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
from aiokafka import AIOKafkaProducer

from streams.client import GateClient
from streams.client.admin import publish_config
from streams.store import Store
from streams.wire.payloads import Verdict
from tests.stack import Scenario, Stack

pytestmark = pytest.mark.e2e

RULES = """
default: 9
rules:
  - message_contains: "glacial"
    value: 8
    delay_s: 3
  - proposition: "adherence-[gb]*"
    value: 0
  - proposition: "fluency-[rf]*"          # inverted fluency claims: repeated phrases, fixed template
    value: 0
  - proposition: "adherence-[mv]*"
    message_contains: "monotone"
    value: 2
  - proposition: "fluency-[vn]*"
    message_contains: "stilted"
    value: 3
"""
PROMETHEUS_LINE = re.compile(r'^drift_[a-z_]+(\{[a-z_]+="[^"]*"(,[a-z_]+="[^"]*")*\})? -?[0-9.e+-]+$')


@dataclass
class Observed:
    scenario: Scenario
    verdicts: list[Verdict]
    stats: dict[str, Any]
    metrics: str
    content_type: str


async def _configure(scenario: Scenario, agent: str, **changes: Any) -> None:
    async with await Store.connect(scenario.settings.database()) as store:
        config = await store.set_config(agent, changes)
    await publish_config(scenario.settings, agent, config.model_dump())
    await scenario.until_configured(agent, **changes)


async def _traffic(scenario: Scenario) -> list[Verdict]:
    tag = uuid.uuid4().hex[:4]
    judged, similar = f"holly-{tag}", f"gabe-{tag}"
    await _configure(scenario, judged, gate_adherence_enabled=True, gate_fluency_enabled=True)
    await _configure(scenario, similar, gate_similarity_enabled=True)
    async with GateClient(settings=scenario.settings, timeout_s=20) as gate:
        verdicts = [
            await gate.check(agent_id=judged, text="Let's all do the worm at the party!"),
            await gate.check(agent_id=judged, text="A monotone note on compliance.", draft_id=f"m-{tag}"),
            await gate.check(agent_id=judged, text="Wuphf is my friend!", draft_id=f"m-{tag}", attempt=2),
            await gate.check(agent_id=judged, text="A stilted and monotone greeting."),
            await gate.check(agent_id=judged, text="A glacial answer about Sabre printers."),
            await gate.check(agent_id=similar, text="The Sabre pyramid is the future of tablets."),
            await gate.check(agent_id=similar, text="The Sabre pyramid is the future of tablets!"),
            await gate.check(agent_id=similar, text="Completely different words about lunch plans."),
        ]
    producer = AIOKafkaProducer(bootstrap_servers=scenario.settings.broker)
    await producer.start()
    try:
        await producer.send_and_wait(scenario.settings.topic("drafts"), b"{broken", key=judged.encode())
    finally:
        await producer.stop()
    return verdicts


@pytest.fixture(scope="module")
def observed(stack: Stack, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Observed]:
    scenario = Scenario(stack, f"m{uuid.uuid4().hex[:8]}.", tmp_path_factory.mktemp("metrics"))
    asyncio.run(scenario.create_topics())
    worker = scenario.worker(judge=scenario.rules(RULES)).start()
    verdicts = asyncio.run(_traffic(scenario))
    base = f"http://127.0.0.1:{worker.env['DRIFT_WEB_PORT']}"
    stats: dict[str, Any] = {}
    for _ in range(50):  # the dead letter is counted shortly after the last verdict
        stats = httpx.get(f"{base}/stats", timeout=5).json()
        if stats["dead_letters"]:
            break
        asyncio.run(asyncio.sleep(0.1))
    metrics = httpx.get(f"{base}/metrics", timeout=5)
    yield Observed(scenario, verdicts, stats, metrics.text, metrics.headers["content-type"])
    scenario.close()


def test_the_traffic_covers_every_kind_of_outcome(observed: Observed) -> None:
    outcomes = {v.outcome for v in observed.verdicts}
    assert {"passed", "corrected", "passed_after_retry", "timeout_pass_through"} <= outcomes
    assert any(v.similarity is not None and not v.similarity.passed for v in observed.verdicts)


def test_stats_counts_match_the_verdicts(observed: Observed) -> None:
    stats, verdicts = observed.stats, observed.verdicts
    assert stats["attempts"] == len(verdicts)
    assert stats["drafts"] == sum(v.attempt == 1 for v in verdicts)
    assert stats["outcomes"] == dict(Counter(v.outcome for v in verdicts))
    first = [v for v in verdicts if v.attempt == 1]
    assert stats["original_success_rate"] == pytest.approx(sum(v.decision == "commit" for v in first) / len(first))
    regenerations = [v for v in verdicts if v.attempt > 1 and v.outcome not in {"skipped", "not_gated_yet"}]
    failed = [v for v in regenerations if v.outcome in {"corrected", "forced_through", "rejected"}]
    assert stats["regenerations"] == len(regenerations) > 0
    assert stats["regeneration_failure_rate"] == pytest.approx(len(failed) / len(regenerations))
    assert stats["dead_letters"] == 1


def test_per_dimension_failures_timeouts_and_means_match_the_verdicts(observed: Observed) -> None:
    stats = observed.stats
    scores = [(name, s) for v in observed.verdicts for name, s in v.scores.items()]
    judged = [(name, s) for name, s in scores if not s.timed_out]
    assert stats["dimension_failures"] == dict(Counter(name for name, s in judged if not s.passed))
    assert stats["dimension_timeouts"] == dict(Counter(name for name, s in scores if s.timed_out))
    for name in ("adherence", "fluency"):
        expected = statistics.fmean(s.score for n, s in judged if n == name)
        assert stats["mean_scores"][name] == pytest.approx(expected)
    similarity = [v.similarity for v in observed.verdicts if v.similarity is not None]
    assert stats["similarity_checks"] == len(similarity)
    assert stats["similarity_failures"] == sum(not s.passed for s in similarity) == 1


def test_latency_judge_calls_and_tokens(observed: Observed) -> None:
    stats = observed.stats
    latencies = sorted(v.latency_ms for v in observed.verdicts)
    p50, p90, p99 = (stats["latency_ms"][q] for q in ("p50", "p90", "p99"))
    assert latencies[0] <= p50 <= p90 <= p99 <= latencies[-1]
    assert p99 >= 1000  # the glacial draft waited for the judge deadline
    assert stats["judge_calls"] > 0
    assert set(stats["token_usage"]) == {
        "input_tokens", "output_tokens", "cache_read_input_tokens", "cache_creation_input_tokens",
    }  # fmt: skip


def test_metrics_page_is_prometheus_text_with_the_same_numbers(observed: Observed) -> None:
    assert observed.content_type.startswith("text/plain")
    samples: dict[str, float] = {}
    for line in observed.metrics.splitlines():
        if line.startswith("#"):
            assert line.startswith(("# HELP drift_", "# TYPE drift_")), line
            continue
        assert PROMETHEUS_LINE.match(line), line
        name, value = line.rsplit(" ", 1)
        samples[name] = float(value)
    stats = observed.stats
    assert samples["drift_attempts_total"] == stats["attempts"]
    assert samples["drift_dead_letters_total"] == stats["dead_letters"]
    for outcome, count in stats["outcomes"].items():
        assert samples[f'drift_outcomes_total{{outcome="{outcome}"}}'] == count
    for dimension, mean in stats["mean_scores"].items():
        assert samples[f'drift_mean_score{{dimension="{dimension}"}}'] == pytest.approx(mean)
    for dimension, failures in stats["dimension_failures"].items():
        assert samples[f'drift_dimension_failures_total{{dimension="{dimension}"}}'] == failures
    assert samples["drift_similarity_failures_total"] == stats["similarity_failures"]
    assert samples["drift_verdict_latency_seconds_count"] == stats["attempts"]  # one observation per verdict
    assert samples['drift_verdict_latency_seconds_bucket{le="+Inf"}'] == stats["attempts"]
    assert samples["drift_judge_latency_seconds_count"] >= stats["judge_calls"] > 0
    assert samples["drift_judge_calls_total"] == stats["judge_calls"]
