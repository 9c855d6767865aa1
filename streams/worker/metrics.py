"""Prometheus text exposition of the gate statistics (no message text, no secrets)."""

from __future__ import annotations

from typing import Any


def _line(name: str, value: Any, labels: dict[str, str] | None = None) -> str:
    label = ""
    if labels:
        label = "{" + ",".join(f'{k}="{v}"' for k, v in sorted(labels.items())) + "}"
    return f"drift_{name}{label} {float(value)}"


def render_prometheus(snapshot: dict[str, Any]) -> str:
    lines = [
        "# HELP drift_attempts_total Draft attempts judged by this worker.",
        "# TYPE drift_attempts_total counter",
        _line("attempts_total", snapshot["attempts"]),
        "# TYPE drift_outcomes_total counter",
        *(_line("outcomes_total", n, {"outcome": k}) for k, n in snapshot["outcomes"].items()),
        "# HELP drift_regenerations_total Judged attempts after the first (TinyTroupe's regenerations).",
        "# TYPE drift_regenerations_total counter",
        _line("regenerations_total", snapshot["regenerations"]),
        "# TYPE drift_failed_regenerations_total counter",
        _line("failed_regenerations_total", snapshot["failed_regenerations"]),
        "# HELP drift_regeneration_failure_rate Failed regenerations / regenerations.",
        "# TYPE drift_regeneration_failure_rate gauge",
        _line("regeneration_failure_rate", snapshot["regeneration_failure_rate"]),
        "# HELP drift_failed_score_mean Mean dimension score of failed regenerations.",
        "# TYPE drift_failed_score_mean gauge",
        *(_line("failed_score_mean", m["mean"], {"dimension": k}) for k, m in snapshot["failed_scores"].items()),
        "# HELP drift_failed_score_sd Standard deviation (population) of the dimension scores of failed regenerations.",
        "# TYPE drift_failed_score_sd gauge",
        *(_line("failed_score_sd", m["sd"], {"dimension": k}) for k, m in snapshot["failed_scores"].items()),
        "# TYPE drift_dimension_failures_total counter",
        *(_line("dimension_failures_total", n, {"dimension": k}) for k, n in snapshot["dimension_failures"].items()),
        "# TYPE drift_dimension_timeouts_total counter",
        *(_line("dimension_timeouts_total", n, {"dimension": k}) for k, n in snapshot["dimension_timeouts"].items()),
        "# TYPE drift_mean_score gauge",
        *(_line("mean_score", v, {"dimension": k}) for k, v in snapshot["mean_scores"].items()),
        "# TYPE drift_similarity_failures_total counter",
        _line("similarity_failures_total", snapshot["similarity_failures"]),
        "# TYPE drift_verdict_latency_ms gauge",
        *(_line("verdict_latency_ms", v, {"quantile": q}) for q, v in snapshot["latency_ms"].items() if v is not None),
        "# TYPE drift_judge_calls_total counter",
        _line("judge_calls_total", snapshot["judge_calls"]),
        "# TYPE drift_judge_tokens_total counter",
        *(_line("judge_tokens_total", n, {"kind": k}) for k, n in snapshot["token_usage"].items()),
        "# TYPE drift_dead_letters_total counter",
        _line("dead_letters_total", snapshot["dead_letters"]),
    ]
    return "\n".join(lines) + "\n"
