"""Sampling: declared marginals (KS), categorical weights, balanced strata, reproducibility, design criteria."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from scipy import stats
from scipy.stats import qmc

from engine.formats.metareason import model as m
from engine.formats.metareason.loader import read_family
from engine.formats.metareason.sampling import (
    CANDIDATES,
    max_correlation,
    min_distance,
    sample,
    stratum_counts,
    unit_design,
    variants,
)

FAMILY = """\
prompt_id: props
prompt_template: "{{ tone }} {{ topic }} {{ t }} {{ p }} {{ u }}"
schema:
  tone:
    type: categorical
    values: [calm, rude, odd]
    weights: [0.5, 0.3, 0.2]
  topic:
    type: categorical
    values: [a, b, c, d]
  t:
    type: truncated_normal
    mu: 0.7
    sigma: 0.15
    min: 0.3
    max: 0.95
  p:
    type: beta
    alpha: 9.0
    beta: 1.0
  u:
    type: uniform
    min: -1.0
    max: 1.0
sampling:
  method: {method}
  {criterion}
  random_seed: 7
  stratified_by: {strata}
n_variants: 2000
oracles:
  j:
    type: llm_judge
    rubric: r
"""


def _family(
    tmp_path: Path, method: str = "latin_hypercube", criterion: str = "maximin", strata: str = "[]"
) -> m.PromptFamily:
    path = tmp_path / f"{method}-{criterion}.yaml"
    line = f"optimization_criterion: {criterion}" if criterion else ""
    path.write_text(FAMILY.format(method=method, criterion=line, strata=strata))
    return read_family(path, set())


DISTRIBUTIONS = {
    "t": stats.truncnorm((0.3 - 0.7) / 0.15, (0.95 - 0.7) / 0.15, loc=0.7, scale=0.15),
    "p": stats.beta(9.0, 1.0),
    "u": stats.uniform(loc=-1.0, scale=2.0),
}


@pytest.mark.parametrize(
    ("method", "criterion"),
    [
        ("latin_hypercube", "maximin"),
        ("latin_hypercube", "correlation"),
        ("latin_hypercube", ""),
        ("random", ""),
        ("sobol", ""),
    ],
)
def test_continuous_marginals_match_the_declared_distributions(tmp_path: Path, method: str, criterion: str) -> None:
    rows = sample(_family(tmp_path, method, criterion))
    for axis, dist in DISTRIBUTIONS.items():
        values = np.array([r[axis] for r in rows])
        assert stats.kstest(values, dist.cdf).pvalue > 0.01, axis
        assert values.min() >= dist.support()[0] and values.max() <= dist.support()[1]


def test_latin_hypercube_marginals_are_far_tighter_than_random(tmp_path: Path) -> None:
    lhs = [r["u"] for r in sample(_family(tmp_path))]
    statistic = stats.kstest(lhs, DISTRIBUTIONS["u"].cdf).statistic
    assert statistic < 1.0 / 2000 + 1e-9  # one point per stratum: the empirical CDF never strays a stratum


def test_categorical_frequencies_match_the_weights(tmp_path: Path) -> None:
    rows = sample(_family(tmp_path, "random", ""))
    counts = Counter(r["tone"] for r in rows)
    observed = [counts[v] for v in ("calm", "rude", "odd")]
    assert stats.chisquare(observed, [0.5 * 2000, 0.3 * 2000, 0.2 * 2000]).pvalue > 0.01
    lhs = Counter(r["tone"] for r in sample(_family(tmp_path)))
    assert [lhs["calm"], lhs["rude"], lhs["odd"]] == [1000, 600, 400]  # LHS bins are exact


def test_strata_are_balanced(tmp_path: Path) -> None:
    family = _family(tmp_path, strata="[topic]")
    counts = Counter(r["topic"] for r in sample(family, 1002))
    assert sorted(counts.values()) == [250, 250, 251, 251]
    both = _family(tmp_path, strata="[topic, tone]")
    cells = Counter((r["topic"], r["tone"]) for r in sample(both, 2000))
    assert cells[("a", "calm")] == 250 and cells[("d", "odd")] == 100  # 2000 x 1/4 x 0.5, 2000 x 1/4 x 0.2
    assert sum(cells.values()) == 2000


def test_stratum_counts_use_largest_remainders() -> None:
    assert stratum_counts([1 / 3] * 3, 10) == [4, 3, 3]
    assert stratum_counts([0.5, 0.3, 0.2], 7) == [4, 2, 1]
    assert sum(stratum_counts([0.1] * 10, 999)) == 999


def test_same_seed_same_variants_and_another_seed_differs(tmp_path: Path) -> None:
    family = _family(tmp_path, strata="[topic]")
    first, second = variants(family, 200), variants(family, 200)
    assert [(v.id, v.params, v.prompt) for v in first] == [(v.id, v.params, v.prompt) for v in second]
    other = family.model_copy(update={"sampling": family.sampling.model_copy(update={"random_seed": 8})})
    assert [v.params for v in variants(other, 200)] != [v.params for v in first]
    assert len({v.id for v in first}) == 200 and first[3].id.startswith("props-00003-")


def test_maximin_keeps_the_best_of_the_candidates_and_esi_improves_on_it() -> None:
    rng = np.random.default_rng(3)
    candidates = [qmc.LatinHypercube(4, seed=rng).random(300) for _ in range(CANDIDATES)]
    best = max(candidates, key=min_distance)
    maximin = unit_design(m.Sampling(optimization_criterion="maximin"), 300, 4, np.random.default_rng(3))
    assert np.array_equal(maximin, best)
    assert min_distance(maximin) == max(min_distance(c) for c in candidates) > min(min_distance(c) for c in candidates)
    esi = unit_design(m.Sampling(optimization_criterion="esi"), 300, 4, np.random.default_rng(3))
    assert min_distance(esi) >= min_distance(maximin)
    correlation = unit_design(m.Sampling(optimization_criterion="correlation"), 300, 4, np.random.default_rng(3))
    assert max_correlation(correlation) == min(max_correlation(c) for c in candidates)


def test_every_design_is_latin(tmp_path: Path) -> None:
    for criterion in ("maximin", "correlation", "esi", None):
        sampling = m.Sampling(optimization_criterion=criterion)
        design = unit_design(sampling, 50, 3, np.random.default_rng(1))
        for column in design.T:
            assert sorted(np.floor(column * 50).astype(int).tolist()) == list(range(50))
