"""Seeded, reproducible sampling of a family's axes into prompt variants.

Every axis is one column of a design in the unit hypercube; a column becomes values by inverse CDF
(``uniform``, ``truncated_normal``, ``beta``) or by weighted bins (``categorical``: the unit interval is cut
into consecutive bins whose widths are the weights, and a value is the bin its coordinate falls in).

Designs (``sampling.method``):

* ``latin_hypercube`` — scipy's :class:`~scipy.stats.qmc.LatinHypercube`: each column has exactly one point
  in each of n equal strata, so marginals are matched far more evenly than by random draws.
  ``optimization_criterion`` chooses among designs: ``maximin`` draws :data:`CANDIDATES` designs and keeps the
  one whose closest pair of points is farthest apart (a real maximin choice, nearest neighbours by k-d tree);
  ``correlation`` keeps the candidate whose largest absolute pairwise column correlation is smallest;
  ``esi`` starts from the maximin choice and runs :data:`EXCHANGES` steps of a stochastic exchange search in
  the spirit of ESE (Jin et al., 2005): one coordinate of a point of the closest pair is swapped with the same
  coordinate of a random other point (a swap within a column keeps the Latin property), and the swap is kept
  only when the smallest pairwise distance grows. No criterion: one plain design.
* ``random`` — independent uniform draws.
* ``sobol`` — a scrambled Sobol' sequence (scipy's :class:`~scipy.stats.qmc.Sobol`; balance is best when n
  is a power of two).

``stratified_by`` takes its (categorical) axes out of the design: every combination of their values is a
stratum, and strata get n × (product of the values' weights) variants, rounded by largest remainder, so
unweighted strata are balanced to within one variant; the stratum labels are then shuffled over the design's
rows. Everything draws from one :class:`numpy.random.Generator` seeded with ``random_seed`` (default 42): the
same file, n and library versions give the same variants.
"""

from __future__ import annotations

import hashlib
import itertools
import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import orjson
from numpy.typing import NDArray
from scipy import stats
from scipy.spatial import cKDTree
from scipy.stats import qmc

from engine.formats.metareason import model as m
from engine.formats.metareason.rendering import compile_template, render

#: candidate designs compared by the maximin and correlation criteria
CANDIDATES = 8
#: exchange steps of the ``esi`` criterion
EXCHANGES = 16

Design = NDArray[np.float64]


@dataclass(frozen=True, slots=True)
class Variant:
    """One prompt of the family: its position, stable id, axis values and rendered prompt."""

    index: int
    id: str
    params: dict[str, Any]
    prompt: str


def sample(family: m.PromptFamily, n: int | None = None) -> list[dict[str, Any]]:
    """``n`` (default ``n_variants``) parameter sets, axis name -> value, in the file's axis order."""
    count = family.n_variants if n is None else n
    if count < 1:
        raise ValueError(f"n must be at least 1, not {count}")
    rng = np.random.default_rng(family.sampling.random_seed)
    axes = family.axis_map
    strata = [name for name in axes if name in family.sampling.stratified_by]
    free = [name for name in axes if name not in strata]
    columns: dict[str, list[Any]] = {}
    if strata:
        categorical = [axis for name in strata if isinstance(axis := axes[name], m.CategoricalAxis)]
        columns.update(_strata(strata, categorical, count, rng))
    design = unit_design(family.sampling, count, len(free), rng)
    for position, name in enumerate(free):
        columns[name] = to_values(axes[name], design[:, position])
    return [dict(zip(axes, row, strict=True)) for row in zip(*(columns[name] for name in axes), strict=True)]


def variants(family: m.PromptFamily, n: int | None = None) -> list[Variant]:
    """The sampled parameter sets rendered through the family's template."""
    template = compile_template(family.prompt_template)
    out = []
    for index, params in enumerate(sample(family, n)):
        prompt = render(template, params)
        digest = hashlib.sha256(orjson.dumps(params, option=orjson.OPT_SORT_KEYS) + prompt.encode()).hexdigest()
        out.append(Variant(index, f"{family.prompt_id}-{index:05d}-{digest[:10]}", params, prompt))
    return out


# -- designs -------------------------------------------------------------------------------------------------


def unit_design(sampling: m.Sampling, n: int, dims: int, rng: np.random.Generator) -> Design:
    """An n x dims design in [0, 1)^dims by ``sampling.method`` and ``optimization_criterion``."""
    if dims == 0:
        return np.empty((n, 0))
    if sampling.method == "random":
        return rng.random((n, dims))
    if sampling.method == "sobol":
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # "balance properties" note when n is not 2**k
            return np.asarray(qmc.Sobol(dims, scramble=True, seed=rng).random(n), dtype=np.float64)
    criterion = sampling.optimization_criterion
    if criterion is None:
        return _lhs(n, dims, rng)
    candidates = [_lhs(n, dims, rng) for _ in range(CANDIDATES)]
    if criterion == "correlation":
        return min(candidates, key=max_correlation)
    best = max(candidates, key=min_distance)
    return _exchange(best, rng) if criterion == "esi" else best


def _lhs(n: int, dims: int, rng: np.random.Generator) -> Design:
    return np.asarray(qmc.LatinHypercube(dims, seed=rng).random(n), dtype=np.float64)


def _exchange(design: Design, rng: np.random.Generator) -> Design:
    """Swaps within columns that move a point of the closest pair, each kept only if it helps."""
    if len(design) < 3:
        return design
    current = design.copy()
    for _ in range(EXCHANGES):
        distances, _ = cKDTree(current).query(current, k=2)
        point = int(np.argmin(distances[:, 1]))
        best = float(distances[point, 1])
        other, column = int(rng.integers(len(current))), int(rng.integers(current.shape[1]))
        trial = current.copy()
        trial[[point, other], column] = trial[[other, point], column]
        if min_distance(trial) > best:
            current = trial
    return current


def min_distance(design: Design) -> float:
    """The smallest distance between two distinct rows (0 for fewer than two rows)."""
    if len(design) < 2:
        return 0.0
    distances, _ = cKDTree(design).query(design, k=2)
    return float(distances[:, 1].min())


def max_correlation(design: Design) -> float:
    """The largest absolute Pearson correlation between two different columns (0 for one column)."""
    if design.shape[1] < 2 or len(design) < 3:
        return 0.0
    matrix = np.asarray(np.corrcoef(design, rowvar=False), dtype=np.float64)
    np.fill_diagonal(matrix, 0.0)
    return float(np.abs(matrix).max())


# -- values --------------------------------------------------------------------------------------------------


def to_values(axis: m.CategoricalAxis | m.ContinuousAxis, column: NDArray[np.float64]) -> list[Any]:
    """Unit coordinates -> axis values (inverse CDF, or weighted bins for categorical axes)."""
    if isinstance(axis, m.CategoricalAxis):
        edges = np.cumsum(axis.probabilities())
        indexes = np.minimum(np.searchsorted(edges, column, side="right"), len(axis.values) - 1)
        return [axis.values[i] for i in indexes.tolist()]
    return [float(v) for v in inverse_cdf(axis, column).tolist()]


def inverse_cdf(axis: m.ContinuousAxis, column: NDArray[np.float64]) -> NDArray[np.float64]:
    if isinstance(axis, m.UniformAxis):
        return axis.min + column * (axis.max - axis.min)
    if isinstance(axis, m.TruncatedNormalAxis):
        low, high = (axis.min - axis.mu) / axis.sigma, (axis.max - axis.mu) / axis.sigma
        values = stats.truncnorm.ppf(column, low, high, loc=axis.mu, scale=axis.sigma)
        return np.clip(np.asarray(values, dtype=np.float64), axis.min, axis.max)
    return np.asarray(stats.beta.ppf(column, axis.alpha, axis.beta), dtype=np.float64)


# -- strata --------------------------------------------------------------------------------------------------


def stratum_counts(weights: Sequence[float], n: int) -> list[int]:
    """``n`` split by ``weights`` (summing to 1) with largest-remainder rounding (ties: first stratum)."""
    exact = [w * n for w in weights]
    counts = [math.floor(x) for x in exact]
    order = sorted(range(len(exact)), key=lambda i: (-(exact[i] - counts[i]), i))
    for i in order[: n - sum(counts)]:
        counts[i] += 1
    return counts


def _strata(names: list[str], axes: list[m.CategoricalAxis], n: int, rng: np.random.Generator) -> dict[str, list[Any]]:
    combos = list(itertools.product(*(range(len(a.values)) for a in axes)))
    weights = [math.prod(a.probabilities()[i] for a, i in zip(axes, combo, strict=True)) for combo in combos]
    counts = stratum_counts(weights, n)
    labels = [combo for combo, count in zip(combos, counts, strict=True) for _ in range(count)]
    order = rng.permutation(len(labels))
    return {
        name: [axis.values[labels[row][position]] for row in order.tolist()]
        for position, (name, axis) in enumerate(zip(names, axes, strict=True))
    }
