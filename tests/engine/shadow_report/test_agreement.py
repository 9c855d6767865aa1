"""Agreement, Cohen's κ and the bootstrap intervals of a shadow's decisions, against hand-computed values."""

from __future__ import annotations

import pytest

from engine.errors import ConfigurationError
from engine.shadow_report.agreement import (
    Confusion,
    agreement,
    bootstrap_agreement,
    cohens_kappa,
    confusion,
    mean_difference,
    sent_back,
)


def _pairs(cc: int, cr: int, rc: int, rr: int) -> list[tuple[str, str]]:
    return (
        [("commit", "commit")] * cc
        + [("commit", "retry")] * cr
        + [("retry", "commit")] * rc
        + [("retry", "retry")] * rr
    )


def test_decisions_reduce_to_sent_back_or_not_and_a_skip_is_not_gated() -> None:
    assert [sent_back(d) for d in ("commit", "retry", "reject", "skip")] == [False, True, True, None]
    with pytest.raises(ConfigurationError, match="unknown gate decision"):
        sent_back("maybe")


def test_the_table_counts_live_by_shadow_and_leaves_skips_out() -> None:
    table = confusion([*_pairs(3, 2, 1, 4), ("reject", "commit"), ("skip", "retry"), ("commit", "skip")])
    assert table == Confusion(commit_commit=3, commit_retry=2, retry_commit=2, retry_retry=4)
    assert (table.n, table.flips) == (11, 4)


@pytest.mark.parametrize(
    ("cells", "expected_agreement", "expected_kappa"),
    [
        # p_o = 85/100; p_e = 0.50·0.45 + 0.50·0.55 = 0.50; κ = (0.85 − 0.50) / 0.50
        ((40, 10, 5, 45), 0.85, 0.70),
        # p_o = 35/50; p_e = 0.50·0.60 + 0.50·0.40 = 0.50; κ = 0.20 / 0.50
        ((20, 5, 10, 15), 0.70, 0.40),
        # p_o = 9/10; p_e = 0.9·0.8 + 0.1·0.2 = 0.74; κ = 0.16 / 0.26
        ((8, 1, 0, 1), 0.90, 0.16 / 0.26),
        # always opposite: p_o = 0, p_e = 0.5 (live commits half, shadow the other half): κ = −1
        ((0, 5, 5, 0), 0.0, -1.0),
    ],
)
def test_agreement_and_kappa_equal_the_hand_computed_values(
    cells: tuple[int, int, int, int], expected_agreement: float, expected_kappa: float
) -> None:
    table = confusion(_pairs(*cells))
    assert agreement(table) == pytest.approx(expected_agreement)
    assert cohens_kappa(table) == pytest.approx(expected_kappa)


def test_kappa_is_undefined_not_nan_when_both_gates_give_one_decision_throughout() -> None:
    table = Confusion(commit_commit=7)
    assert agreement(table) == 1.0 and cohens_kappa(table) is None
    assert agreement(Confusion()) is None and cohens_kappa(Confusion()) is None
    assert bootstrap_agreement(Confusion()) == (None, None)
    agreement_ci, kappa_ci = bootstrap_agreement(table)
    assert agreement_ci == (1.0, 1.0) and kappa_ci is None


def test_bootstrap_intervals_cover_the_estimates_and_repeat_with_the_seed() -> None:
    table = Confusion(40, 10, 5, 45)
    agreement_ci, kappa_ci = bootstrap_agreement(table, resamples=2000, seed=7)
    assert agreement_ci is not None and kappa_ci is not None
    assert agreement_ci[0] < 0.85 < agreement_ci[1] and kappa_ci[0] < 0.70 < kappa_ci[1]
    assert 0.05 < agreement_ci[1] - agreement_ci[0] < 0.25  # about ±1.96·sqrt(.85·.15/100) ≈ ±0.07
    assert bootstrap_agreement(table, resamples=2000, seed=7) == (agreement_ci, kappa_ci)
    assert bootstrap_agreement(table, resamples=2000, seed=8) != (agreement_ci, kappa_ci)


def test_a_larger_sample_gives_a_narrower_interval() -> None:
    small, _ = bootstrap_agreement(Confusion(40, 10, 5, 45))
    large, _ = bootstrap_agreement(Confusion(4000, 1000, 500, 4500))
    assert small is not None and large is not None
    assert large[1] - large[0] < (small[1] - small[0]) / 5


def test_mean_difference_is_shadow_minus_live_with_a_covering_interval() -> None:
    live = [7.0, 8.0, 6.0, 9.0, 7.5, 8.5]
    shadow = [6.0, 7.5, 5.0, 8.0, 7.0, 7.0]  # differences −1, −0.5, −1, −1, −0.5, −1.5: mean −0.9166…
    found = mean_difference(live, shadow, resamples=1000, seed=0)
    assert found is not None
    mean, (low, high) = found
    assert mean == pytest.approx(-5.5 / 6)
    assert low <= mean <= high and low >= -1.5 and high <= -0.5
    assert mean_difference([], []) is None
    with pytest.raises(ConfigurationError, match="equal lengths"):
        mean_difference([1.0], [1.0, 2.0])


def test_mean_difference_resamples_in_chunks_with_the_same_result_as_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    import engine.shadow_report.agreement as module

    live, shadow = [float(i % 7) for i in range(50)], [i * 0.37 for i in range(50)]  # 50 distinct differences
    whole = mean_difference(live, shadow, resamples=300, seed=3)
    monkeypatch.setattr(module, "_CHUNK_VALUES", 50 * 7)  # 7 resamples per chunk
    assert mean_difference(live, shadow, resamples=300, seed=3) == whole


def test_bad_resample_counts_and_levels_are_refused() -> None:
    with pytest.raises(ConfigurationError, match="resamples"):
        bootstrap_agreement(Confusion(1, 0, 0, 1), resamples=0)
    with pytest.raises(ConfigurationError, match="level"):
        mean_difference([1.0], [2.0], level=1.0)


def test_repeated_differences_are_resampled_as_counts_with_the_same_distribution() -> None:
    # 1,000 attempts whose difference is −1 (300), 0 (500) or +2 (200): mean 0.1, and the bootstrap mean's
    # standard error is sd/sqrt(n) = sqrt(0.3·1.1² + 0.5·0.1² + 0.2·1.9²)/sqrt(1000) ≈ 0.0331
    live = [0.0] * 1000
    shadow = [-1.0] * 300 + [0.0] * 500 + [2.0] * 200
    found = mean_difference(live, shadow, resamples=4000, seed=5)
    assert found is not None
    mean, (low, high) = found
    assert mean == pytest.approx(0.1)
    assert (high - low) / 2 == pytest.approx(1.96 * 0.0331, rel=0.1)
    assert mean_difference(live, shadow, resamples=4000, seed=5) == found
