"""Prometheus exposition of the gate statistics through ``prometheus_client`` (no message text, no secrets).

Counters and gauges are read from :class:`GateStats` at scrape time (a custom collector); verdict and judge
latency are histograms the gate observes as it goes. Each worker has its own registry, never
``prometheus_client``'s global one. The names are documented in ``docs/operations.md``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from streams.services.alerting import AlertCounts
from streams.services.shadow import ShadowCounts
from streams.services.stats import GateStats

CONTENT_TYPE = "text/plain; version=0.0.4"  # aiohttp adds the charset; it refuses one here


def _family(
    kind: type[CounterMetricFamily | GaugeMetricFamily],
    name: str,
    doc: str,
    value: float | None = None,
    label: str | None = None,
    by: Any = None,
) -> Metric:
    family = kind(f"drift_{name}", doc, labels=[label] if label else None)
    if label:
        for key, n in sorted(by.items()):
            family.add_metric([key], float(n))
    else:
        family.add_metric([], float(value or 0))
    return family


def _counter(name: str, doc: str, value: float | None = None, label: str | None = None, by: Any = None) -> Metric:
    return _family(CounterMetricFamily, name, doc, value, label, by)


def _gauge(name: str, doc: str, value: float | None = None, label: str | None = None, by: Any = None) -> Metric:
    return _family(GaugeMetricFamily, name, doc, value, label, by)


class GateStatsCollector(Collector):
    def __init__(self, stats: GateStats) -> None:
        self.stats = stats

    def collect(self) -> Iterator[Metric]:
        s = self.stats.snapshot()
        failed = s["failed_scores"]
        yield _counter("attempts", "Draft attempts judged by this worker.", s["attempts"])
        yield _counter("outcomes", "Attempts per outcome.", label="outcome", by=s["outcomes"])
        yield _counter("regenerations", "Judged attempts after the first (TinyTroupe's regenerations).",
                       s["regenerations"])  # fmt: skip
        yield _counter("failed_regenerations", "Regenerations whose checks failed.", s["failed_regenerations"])
        yield _gauge("regeneration_failure_rate", "Failed regenerations / regenerations.",
                     s["regeneration_failure_rate"])  # fmt: skip
        yield _gauge("failed_score_mean", "Mean dimension score of failed regenerations.", label="dimension",
                     by={k: m["mean"] for k, m in failed.items()})  # fmt: skip
        yield _gauge("failed_score_sd", "Standard deviation (population) of the scores of failed regenerations.",
                     label="dimension", by={k: m["sd"] for k, m in failed.items()})  # fmt: skip
        yield _counter("dimension_failures", "Failed dimension checks.", label="dimension", by=s["dimension_failures"])
        yield _counter("dimension_timeouts", "Dimension checks past their deadline (passed, fail-open).",
                       label="dimension", by=s["dimension_timeouts"])  # fmt: skip
        yield _gauge("mean_score", "Mean score per dimension.", label="dimension", by=s["mean_scores"])
        yield _counter("similarity_failures", "Failed similarity checks.", s["similarity_failures"])
        yield _counter("judge_calls", "Judge calls of the gate's checks.", s["judge_calls"])
        yield _counter("judge_tokens", "Judge tokens by kind.", label="kind", by=s["token_usage"])
        yield _counter("dead_letters", "Records sent to the dead-letter topic.", s["dead_letters"])
        state = s["state"]
        yield _gauge("agents_in_memory", "Distinct agents with state in this worker (idle ones are evicted).",
                     state.get("agents_in_memory"))  # fmt: skip
        yield _gauge("pending_attempts", "pending-attempts entries in memory.", state.get("pending_attempts"))
        yield _gauge("table_restore_seconds", "Last assignment to its tables being restored and ready.",
                     state.get("table_restore_seconds"))  # fmt: skip
        yield _gauge("sink_lag_records", "Records on a sink's topic its consumer group has not committed.",
                     label="sink", by=state.get("sink_lag_records") or {})  # fmt: skip
        yield _counter("group_members_ended", "Group members of killed workers this worker ended at once.",
                       state.get("group_members_ended"))  # fmt: skip
        yield _counter("group_rejoins_on_news", "Rebalances this worker joined on a peer's news, not its heartbeat.",
                       state.get("group_rejoins_on_news"))  # fmt: skip
        yield _counter("claim_wait_seconds", "Seconds partitions new to this worker waited for their old owner's "
                       "release (judging through joins).", state.get("claim_wait_seconds"))  # fmt: skip


class AlertCollector(Collector):
    """The drift monitor's alerts: raised by (dimension, cause), and open (all workers, from the database)."""

    def __init__(self, counts: AlertCounts) -> None:
        self.counts = counts

    def collect(self) -> Iterator[Metric]:
        raised = CounterMetricFamily("drift_alerts", "Drift-monitor alerts raised by this worker.",
                                     labels=["dimension", "cause"])  # fmt: skip
        for (dimension, cause), n in sorted(self.counts.raised.items()):
            raised.add_metric([dimension, cause], float(n))
        yield raised
        yield _gauge("open_alerts", "Drift-monitor alerts not yet acknowledged (every worker's).", self.counts.open)
        yield _counter("alert_webhook_dropped", "Alerts the webhook's full queue dropped.", self.counts.webhook_dropped)


class ShadowCollector(Collector):
    """Shadow gating: candidate verdicts stored and samples skipped (the lane had fallen behind), per shadow."""

    def __init__(self, counts: ShadowCounts) -> None:
        self.counts = counts

    def collect(self) -> Iterator[Metric]:
        yield _counter("shadow_verdicts", "Shadow verdicts this worker stored.", label="shadow",
                       by=self.counts.verdicts)  # fmt: skip
        yield _counter("shadow_skipped", "Shadow samples skipped because the shadow lane had fallen behind.",
                       label="shadow", by=self.counts.skipped)  # fmt: skip


def metrics_registry(
    stats: GateStats, alerts: AlertCounts | None = None, shadows: ShadowCounts | None = None
) -> CollectorRegistry:
    """A registry with the statistics of one worker, its two latency histograms, the monitor's alerts and the
    shadows' counts."""
    registry = CollectorRegistry(auto_describe=True)
    registry.register(GateStatsCollector(stats))
    if alerts is not None:
        registry.register(AlertCollector(alerts))
    if shadows is not None:
        registry.register(ShadowCollector(shadows))
    registry.register(stats.verdict_latency)
    registry.register(stats.judge_latency)
    registry.register(stats.retries.counter)
    return registry


def exposition(registry: CollectorRegistry) -> bytes:
    return generate_latest(registry)


def render_prometheus(stats: GateStats) -> str:
    """The text exposition of ``stats`` (what ``/metrics`` serves)."""
    return exposition(metrics_registry(stats)).decode()
