"""The drift monitor's guarantees, measured by simulation: false alarms, detection, attribution and cost.

Run from the repository root: ``.venv/bin/python -m ops.bench.monitor [--streams N] [--seed S]``. Prints the
tables and merges ``monitor_*`` keys into ``ops/bench/results.json``.

Score streams look like a judge's: discrete 0–9, skewed towards 7–9 (a latent mean of 7.8 plus a left-skewed
noise, rounded and clipped), and a variant whose noise is autocorrelated (AR(1), φ = 0.5). Three rules watch
each stream, all with the same reference (the mean of its first 50 observations):

* **ours**: :mod:`engine.monitor` (betting e-processes, α = 0.01) at ``min_shift`` 1.0 (the default) and 0.5;
* **rolling z**: the mean of the last 50 against the reference, |z| > 3 with the reference's sd, checked at
  every observation (what monitoring products do);
* **threshold**: the mean of the last 20 more than 1 point under the reference, checked at every observation.

Figures: the share of drift-free streams of 2,000 observations that ever alert (with a 95 % Wilson interval);
for drops of 0.5, 1 and 2 points planted at a random time, the share detected within 500 observations and the
median delay; the attribution of a judge shift against one agent's drift; µs per observation and bytes per
stream of ours.
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import time
import tracemalloc
from collections.abc import Callable, Iterator

import numpy as np

from engine.monitor.attribution import AttributionPolicy, Attributor, Cause
from engine.monitor.stream import StreamPolicy, StreamState, observe, opened
from ops.bench.common import RESULTS_PATH, machine_info, merge_results

LENGTH = 2000
REFERENCE_N = 50
HORIZON = 500
SHIFTS = (0.5, 1.0, 2.0)
LATENT_MEAN = 7.8
ALPHA = 0.01

Rule = Callable[[np.ndarray], int | None]  # index of the first alert, or None


def scores(
    rng: np.random.Generator, n: int, autocorrelated: bool, drop_at: int | None = None, drop: float = 0.0
) -> np.ndarray:
    """One judge-like stream: left-skewed noise around 7.8, rounded and clipped to 0–9."""
    raw = 1.2 - rng.gamma(2.0, 0.6, size=n)  # mean 0, sd ≈ 0.85, a long tail of low scores
    if autocorrelated:
        noise = np.empty(n)
        prev, phi = 0.0, 0.5
        for i, e in enumerate(raw):
            prev = phi * prev + math.sqrt(1 - phi * phi) * e
            noise[i] = prev
        raw = noise
    mean = np.full(n, LATENT_MEAN)
    if drop_at is not None:
        mean[drop_at:] -= drop
    return np.clip(np.rint(mean + raw), 0, 9)


def ours(min_shift: float) -> Rule:
    policy = StreamPolicy(alpha=ALPHA, min_shift=min_shift, reference_n=REFERENCE_N)

    def first_alert(xs: np.ndarray) -> int | None:
        state = StreamState.start(policy)
        for i, x in enumerate(xs.tolist()):
            seen = observe(policy, state, x)
            if seen.fired:
                return i
            state = seen.state
        return None

    return first_alert


def rolling_z(xs: np.ndarray) -> int | None:
    ref, sd = xs[:REFERENCE_N].mean(), max(xs[:REFERENCE_N].std(ddof=1), 1e-9)
    window = 50
    sums = np.convolve(xs, np.ones(window), "valid") / window  # sums[k] = mean of xs[k : k + window]
    z = (sums[REFERENCE_N:] - ref) / (sd / math.sqrt(window))
    hits = np.flatnonzero(np.abs(z) > 3)
    return int(hits[0]) + REFERENCE_N + window - 1 if hits.size else None


def threshold(xs: np.ndarray) -> int | None:
    ref, window = xs[:REFERENCE_N].mean(), 20
    means = np.convolve(xs, np.ones(window), "valid") / window
    hits = np.flatnonzero(means[REFERENCE_N:] < ref - 1.0)
    return int(hits[0]) + REFERENCE_N + window - 1 if hits.size else None


def rules() -> dict[str, Rule]:
    return {
        "ours (min_shift 1.0)": ours(1.0),
        "ours (min_shift 0.5)": ours(0.5),
        "rolling z": rolling_z,
        "threshold": threshold,
    }


def wilson(k: int, n: int) -> tuple[float, float]:
    """95 % Wilson score interval of a binomial share."""
    if n == 0:
        return (0.0, 1.0)
    z, p = 1.96, k / n
    centre, half = p + z * z / (2 * n), z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return ((centre - half) / (1 + z * z / n), (centre + half) / (1 + z * z / n))


def false_alarms(n_streams: int, seed: int) -> dict[str, dict[str, float]]:
    out: dict[str, dict[str, float]] = {}
    for variant, auto in (("iid", False), ("autocorrelated", True)):
        rng = np.random.default_rng(seed)
        streams = [scores(rng, LENGTH, auto) for _ in range(n_streams)]
        for name, rule in rules().items():
            k = sum(rule(xs) is not None for xs in streams)
            lo, hi = wilson(k, n_streams)
            out[f"{name} / {variant}"] = {"share": k / n_streams, "low": lo, "high": hi}
    return out


def detection(n_streams: int, seed: int) -> dict[str, dict[str, float]]:
    out: dict[str, dict[str, float]] = {}
    for shift in SHIFTS:
        rng = np.random.default_rng(seed + int(shift * 10))
        planted = [int(rng.integers(100, LENGTH - HORIZON)) for _ in range(n_streams)]
        streams = [scores(rng, LENGTH, False, at, shift) for at in planted]
        for name, rule in rules().items():
            delays, early = [], 0
            for at, xs in zip(planted, streams, strict=True):
                hit = rule(xs)
                if hit is not None and hit < at:
                    early += 1
                elif hit is not None and hit - at <= HORIZON:
                    delays.append(hit - at)
            out[f"{name} / drop {shift}"] = {
                "detected": len(delays) / n_streams,
                "median_delay": statistics.median(delays) if delays else math.nan,
                "alerted_before_the_drop": early / n_streams,
            }
    return out


def _attribution_run(rng: np.random.Generator, judge_moves: bool, agents: int = 20, steps: int = 1500) -> bool:
    """One simulated dimension; True when the alerts are attributed as they should be."""
    policy = StreamPolicy(alpha=ALPHA, min_shift=1.0, reference_n=REFERENCE_N)
    anchor_policy = StreamPolicy(alpha=ALPHA, min_shift=0.5, reference_n=0, baseline=0.0, low=-9.0, high=9.0)
    labels = np.clip(np.rint(LATENT_MEAN + 1.2 - rng.gamma(2.0, 0.6, size=50)), 0, 9)
    at = int(rng.integers(300, 700))
    streams = [scores(rng, steps, False, at if (judge_moves or i == 0) else None, 2.0) for i in range(agents)]
    states, anchor = [StreamState.start(policy) for _ in range(agents)], StreamState.start(anchor_policy)
    attributor = Attributor(AttributionPolicy(guard_s=300.0), anchors_configured=True)
    causes: dict[str, Cause] = {}
    for t in range(steps):
        for i in range(agents):
            seen = observe(policy, states[i], float(streams[i][t]))
            states[i] = seen.state
            if seen.fired:
                alert_id = f"{i}:{t}"
                states[i] = opened(seen.state, alert_id)
                causes[alert_id], revised = attributor.agent_alert("adherence", str(i), alert_id, float(t), agents)
                causes.update(dict.fromkeys(revised, Cause.JUDGE))
        if rng.random() < 0.02 * agents:  # the anchors' share: 2 % of the judge calls
            item = int(rng.integers(labels.size))
            moved = 2.0 if (judge_moves and t >= at) else 0.0
            rescored = min(max(round(labels[item] - moved + rng.normal(0, 0.3)), 0), 9)
            seen = observe(anchor_policy, anchor, rescored - labels[item])
            anchor = seen.state
            if seen.fired:
                anchor = opened(seen.state, "anchor")
                causes.update(dict.fromkeys(attributor.anchor_fired("adherence", float(t)), Cause.JUDGE))
    if judge_moves:
        return bool(causes) and all(c is Cause.JUDGE for c in causes.values())
    drifting = [c for k, c in causes.items() if k.startswith("0:")]
    return drifting == [Cause.AGENT]


def attribution(runs: int, seed: int) -> dict[str, float]:
    rng = np.random.default_rng(seed)
    return {
        "judge_shift_attributed_to_judge": sum(_attribution_run(rng, True) for _ in range(runs)) / runs,
        "agent_drift_attributed_to_agent": sum(_attribution_run(rng, False) for _ in range(runs)) / runs,
    }


def cost() -> dict[str, float]:
    policy = StreamPolicy(alpha=ALPHA, min_shift=1.0, reference_n=REFERENCE_N)
    xs = scores(np.random.default_rng(1), 100_000, False).tolist()
    best = math.inf
    for _ in range(5):
        state, start = StreamState.start(policy), time.process_time()
        for x in xs:
            state = observe(policy, state, x).state
        best = min(best, (time.process_time() - start) / len(xs) * 1e6)
    tracemalloc.start()
    before = tracemalloc.take_snapshot()
    held = [_warm(policy) for _ in range(1000)]
    grown = sum(s.size_diff for s in tracemalloc.take_snapshot().compare_to(before, "filename"))
    tracemalloc.stop()
    return {"us_per_observation": best, "bytes_per_stream": grown / len(held)}


def _warm(policy: StreamPolicy) -> StreamState:
    state = StreamState.start(policy)
    for x in (8.0,) * (REFERENCE_N + 5):
        state = observe(policy, state, x).state
    return state


def _rows(title: str, table: dict[str, dict[str, float]]) -> Iterator[str]:
    yield f"\n{title}"
    for key, values in table.items():
        yield f"  {key:<42} " + "  ".join(f"{k}={v:.3f}" for k, v in values.items())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m ops.bench.monitor", description=__doc__.split("\n\n")[0])
    parser.add_argument("--streams", type=int, default=1000, help="drift-free streams per variant (default 1000)")
    parser.add_argument("--seed", type=int, default=20261126)
    args = parser.parse_args(argv)
    start = time.perf_counter()
    fa, det = false_alarms(args.streams, args.seed), detection(max(args.streams // 3, 50), args.seed)
    attr, spent = attribution(max(args.streams // 20, 20), args.seed), cost()
    for line in (
        *_rows("false alarms (share of drift-free streams that ever alert)", fa),
        *_rows("planted drops", det),
    ):
        print(line)
    print(f"\nattribution: {attr}\ncost: {spent}\n({time.perf_counter() - start:.0f} s; {machine_info()['cpu']})")
    merge_results(RESULTS_PATH, _results(fa, det, attr, spent))
    return 0


def _results(
    fa: dict[str, dict[str, float]], det: dict[str, dict[str, float]], attr: dict[str, float], spent: dict[str, float]
) -> dict[str, float]:
    return {
        "monitor_false_alarm_share": fa["ours (min_shift 1.0) / iid"]["share"],
        "monitor_false_alarm_share_high": fa["ours (min_shift 1.0) / iid"]["high"],
        "monitor_false_alarm_autocorrelated": fa["ours (min_shift 1.0) / autocorrelated"]["share"],
        "monitor_rolling_z_false_alarm_share": fa["rolling z / iid"]["share"],
        "monitor_threshold_false_alarm_share": fa["threshold / iid"]["share"],
        "monitor_detected_drop2": det["ours (min_shift 1.0) / drop 2.0"]["detected"],
        "monitor_delay_drop2": det["ours (min_shift 1.0) / drop 2.0"]["median_delay"],
        "monitor_judge_attribution": attr["judge_shift_attributed_to_judge"],
        "monitor_agent_attribution": attr["agent_drift_attributed_to_agent"],
        "monitor_us_per_observation": spent["us_per_observation"],
        "monitor_bytes_per_stream": spent["bytes_per_stream"],
    }


if __name__ == "__main__":
    sys.exit(main())
