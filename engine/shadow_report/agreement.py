"""How often two gates decide alike on the same attempts, and how sure we are of it.

Each attempt has a live and a shadow decision. Both are reduced to the question the gate answers: does the draft
go out (``commit``) or is it sent back (``retry``; a ``reject`` is sent back too)? An agent's silence (``skip``)
is not gated and is left out. On the 2×2 table of those decisions (rows: live, columns: shadow):

* **agreement** ``p_o`` is the share of attempts on the diagonal;
* **Cohen's κ** is ``(p_o − p_e) / (1 − p_e)``, with ``p_e`` the agreement two independent gates with the same
  commit rates would reach by chance. When both gates give one and the same decision to every attempt,
  ``p_e = 1`` and κ is undefined (``None``), never NaN.

Intervals are **percentile bootstrap** intervals over the compared attempts, paired (an attempt's live and shadow
verdicts are drawn together) and seeded (the same data and seed give the same interval). Resampling ``n``
attempts with replacement from the 2×2 table is exactly a multinomial draw of the four cell counts, so the
decision intervals cost the same for ten attempts as for a million.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from engine.errors import ConfigurationError

#: Resamples of every bootstrap interval unless told otherwise, and the interval's coverage.
RESAMPLES = 2000
LEVEL = 0.95
#: Cap on resampled values held at once by :func:`mean_difference` (memory, not accuracy).
_CHUNK_VALUES = 4_000_000

Interval = tuple[float, float]


def sent_back(decision: str) -> bool | None:
    """``False`` for a commit, ``True`` for a retry or reject, ``None`` for a skip (nothing gated)."""
    if decision == "commit":
        return False
    if decision in ("retry", "reject"):
        return True
    if decision == "skip":
        return None
    raise ConfigurationError(f"unknown gate decision {decision!r} (commit, retry, reject or skip)")


@dataclass(frozen=True, slots=True)
class Confusion:
    """Counts of compared attempts by (live, shadow) decision: ``commit_retry`` = live commit, shadow retry."""

    commit_commit: int = 0
    commit_retry: int = 0
    retry_commit: int = 0
    retry_retry: int = 0

    @property
    def n(self) -> int:
        return self.commit_commit + self.commit_retry + self.retry_commit + self.retry_retry

    @property
    def flips(self) -> int:
        return self.commit_retry + self.retry_commit

    def cells(self) -> tuple[int, int, int, int]:
        return self.commit_commit, self.commit_retry, self.retry_commit, self.retry_retry


def confusion(pairs: Iterable[tuple[str, str]]) -> Confusion:
    """The table of ``(live decision, shadow decision)`` pairs; a pair with a skip on either side is left out."""
    counts = [0, 0, 0, 0]
    for live, shadow in pairs:
        a, b = sent_back(live), sent_back(shadow)
        if a is not None and b is not None:
            counts[2 * a + b] += 1
    return Confusion(*counts)


def _po_pe(cells: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Observed and chance agreement of tables ``cells[..., 4]`` (cc, cr, rc, rr), as shares."""
    n = cells.sum(axis=-1)
    po = (cells[..., 0] + cells[..., 3]) / n
    live_commit = (cells[..., 0] + cells[..., 1]) / n
    shadow_commit = (cells[..., 0] + cells[..., 2]) / n
    pe = live_commit * shadow_commit + (1 - live_commit) * (1 - shadow_commit)
    return po, pe


def _kappa(po: np.ndarray, pe: np.ndarray) -> np.ndarray:
    undefined = np.isclose(pe, 1.0, rtol=0.0, atol=1e-12)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(undefined, np.nan, (po - pe) / np.where(undefined, 1.0, 1 - pe))


def agreement(table: Confusion) -> float | None:
    """Share of compared attempts both gates decided alike; ``None`` when nothing was compared."""
    return None if table.n == 0 else (table.commit_commit + table.retry_retry) / table.n


def cohens_kappa(table: Confusion) -> float | None:
    """Cohen's κ of the table; ``None`` when nothing was compared or κ is undefined (``p_e = 1``)."""
    if table.n == 0:
        return None
    po, pe = _po_pe(np.asarray(table.cells(), dtype=np.float64))
    value = float(_kappa(po, pe))
    return None if np.isnan(value) else value


def _percentile(values: np.ndarray, level: float) -> Interval | None:
    values = values[~np.isnan(values)]
    if values.size == 0:
        return None
    tail = (1.0 - level) / 2.0
    low, high = np.quantile(values, [tail, 1.0 - tail])
    return float(low), float(high)


def _check(resamples: int, level: float) -> None:
    if resamples < 1:
        raise ConfigurationError(f"resamples must be at least 1, not {resamples}")
    if not 0.0 < level < 1.0:
        raise ConfigurationError(f"the interval's level must be strictly between 0 and 1, not {level}")


def bootstrap_agreement(
    table: Confusion, *, resamples: int = RESAMPLES, seed: int = 0, level: float = LEVEL
) -> tuple[Interval | None, Interval | None]:
    """Percentile bootstrap intervals of (agreement, κ); ``None`` for nothing compared, or for κ when no
    resample defines it. Resamples where κ is undefined are left out of κ's interval."""
    _check(resamples, level)
    if table.n == 0:
        return None, None
    rng = np.random.default_rng(seed)
    shares = np.asarray(table.cells(), dtype=np.float64) / table.n
    drawn = rng.multinomial(table.n, shares, size=resamples).astype(np.float64)
    po, pe = _po_pe(drawn)
    return _percentile(po, level), _percentile(_kappa(po, pe), level)


def mean_difference(
    live: Sequence[float], shadow: Sequence[float], *, resamples: int = RESAMPLES, seed: int = 0, level: float = LEVEL
) -> tuple[float, Interval] | None:
    """Mean of ``shadow − live`` over paired scores and its percentile bootstrap interval (pairs resampled
    together); ``None`` for no pairs."""
    _check(resamples, level)
    a, b = np.asarray(live, dtype=np.float64), np.asarray(shadow, dtype=np.float64)
    if a.shape != b.shape or a.ndim != 1:
        raise ConfigurationError(f"paired scores need equal lengths, got {a.size} and {b.size}")
    if a.size == 0:
        return None
    diff = b - a
    means = _resampled_means(diff, resamples, np.random.default_rng(seed))
    interval = _percentile(means, level)
    assert interval is not None  # every resample of a non-empty sample has a mean
    return float(diff.mean()), interval


def _resampled_means(values: np.ndarray, resamples: int, rng: np.random.Generator) -> np.ndarray:
    """Means of ``resamples`` samples of ``values`` drawn with replacement. Gate scores are weighted means of
    whole-number judgements, so differences repeat: with few distinct values a resample is a multinomial draw of
    how often each value is taken (the same distribution, at a cost independent of the number of attempts);
    otherwise the values are drawn by index, in chunks that bound the memory held."""
    distinct, counts = np.unique(values, return_counts=True)
    if distinct.size * 4 <= values.size:
        drawn = rng.multinomial(values.size, counts / values.size, size=resamples)
        return np.asarray(drawn @ distinct / values.size)
    chunk = max(1, _CHUNK_VALUES // values.size)
    return np.concatenate(
        [values[rng.integers(0, values.size, size=(min(chunk, resamples - done), values.size))].mean(axis=1)
         for done in range(0, resamples, chunk)]
    )  # fmt: skip
