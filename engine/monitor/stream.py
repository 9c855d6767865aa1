"""One monitored stream — an (agent, dimension, source) triple — as a small immutable state.

A stream's **reference** is fixed before its detector starts: the agent's golden baseline score for the
dimension when one is given, else the mean of its first ``reference_n`` observations (frozen once taken). After
an alert the stream keeps observing but raises no second alert until the alert is acknowledged; an
acknowledgement **re-references** it: the next ``reference_n`` observations become its new reference (the
agent's new normal), whatever the reference was before, and the detector restarts from scratch.

Sources: ``gate`` (first-attempt gate scores only: a retry's score was selected by the gate, so it is
biased), ``evaluation`` (offline evaluation runs' dimension scores) and ``anchor`` (the judge re-scoring the
frozen anchor set: observations are judge score minus the anchor's reference score, in ``[-9, 9]``).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields, replace
from enum import StrEnum
from typing import Any

from engine.errors import ConfigurationError
from engine.monitor.detector import DetectorSpec, DetectorState, alerted, update

_RECENT_WEIGHT = 0.05


class Source(StrEnum):
    """Where a stream's observations come from."""

    GATE = "gate"
    EVALUATION = "evaluation"
    ANCHOR = "anchor"


@dataclass(frozen=True, slots=True)
class StreamPolicy:
    """A stream's detector settings (per agent: ``monitor_alpha``, ``monitor_min_shift``, ``monitor_reference``)."""

    alpha: float = 0.01
    min_shift: float = 1.0
    reference_n: int = 50
    baseline: float | None = None  # the golden baseline's score, when the reference is the baseline
    low: float = 0.0
    high: float = 9.0

    def __post_init__(self) -> None:
        reference = (self.low + self.high) / 2 if self.baseline is None else self.baseline
        self.spec(reference).check()
        if self.reference_n < 0:
            raise ConfigurationError(f"monitor: the reference needs at least 0 observations, got {self.reference_n}")

    def spec(self, reference: float) -> DetectorSpec:
        return DetectorSpec(reference, self.min_shift, self.alpha, self.low, self.high)


@dataclass(frozen=True, slots=True)
class StreamState:
    """Reference (``None`` while it is being taken), warm-up sums, the detector and the open alert's id."""

    reference: float | None = None
    warmup_n: int = 0
    warmup_sum: float = 0.0
    detector: DetectorState = field(default_factory=DetectorState)
    open_alert: str | None = None
    observations: int = 0
    recent: float | None = None  # exponentially weighted mean of the observations since the reference (w = 0.05)

    @staticmethod
    def start(policy: StreamPolicy) -> StreamState:
        return StreamState(reference=policy.baseline)


@dataclass(frozen=True, slots=True)
class Observed:
    """The stream after one observation, and whether this observation raised an alert."""

    state: StreamState
    fired: bool


def observe(policy: StreamPolicy, state: StreamState, score: float) -> Observed:
    """Feed one score; ``fired`` is true only on the observation at which the detector first crosses ``1/α``."""
    seen = state.observations + 1
    if state.reference is None:
        n, total = state.warmup_n + 1, state.warmup_sum + min(max(score, policy.low), policy.high)
        reference = total / n if n >= policy.reference_n else None
        return Observed(StreamState(reference, n, total, state.detector, state.open_alert, seen), False)
    spec = policy.spec(state.reference)
    detector = update(spec, state.detector, score)
    fired = state.open_alert is None and alerted(spec, detector)
    recent = score if state.recent is None else state.recent + _RECENT_WEIGHT * (score - state.recent)
    kept = StreamState(state.reference, state.warmup_n, state.warmup_sum, detector, state.open_alert, seen, recent)
    return Observed(kept, fired)


def opened(state: StreamState, alert_id: str) -> StreamState:
    """The stream with an open alert: it observes on but raises nothing new until acknowledged."""
    return replace(state, open_alert=alert_id)


def acknowledged(state: StreamState) -> StreamState:
    """Re-reference after an acknowledgement: the next observations set a new reference, a fresh detector."""
    return StreamState(observations=state.observations)


def to_json(state: StreamState) -> dict[str, Any]:
    """The state as a JSON object (the ``monitor_streams.state`` column)."""
    return asdict(state)


def from_json(data: dict[str, Any]) -> StreamState:
    """The state stored by :func:`to_json` (unknown keys of a newer version are ignored)."""
    known = {f.name for f in fields(StreamState)}
    values = {k: v for k, v in data.items() if k in known}
    d = data["detector"]
    values["detector"] = DetectorState(int(d["n"]), *(float(d[f.name]) for f in fields(DetectorState)[1:]))
    return StreamState(**values)


@dataclass(frozen=True, slots=True)
class Trace:
    """A stream replayed from its scores: the reference, the evidence after each score (None while the
    reference is being taken) and the observations (0-based) at which it alerted (re-referencing after each,
    as an acknowledgement would)."""

    reference: float | None
    evidence: list[float | None]
    alerts: list[int]
    threshold: float


def trace(policy: StreamPolicy, scores: list[float]) -> Trace:
    """Replay ``scores`` through a fresh stream (what ``drift view`` draws beside the scores)."""
    state, evidence, fired = StreamState.start(policy), [], []
    for i, score in enumerate(scores):
        seen = observe(policy, state, score)
        state = seen.state
        evidence.append(None if state.reference is None else state.detector.evidence)
        if seen.fired:
            fired.append(i)
            state = opened(state, str(i))
    return Trace(state.reference, evidence, fired, policy.spec(state.reference or 0.0).threshold)
