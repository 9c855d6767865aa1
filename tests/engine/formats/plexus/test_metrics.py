"""Agreement with labels: label normalisation, Gwet's AC1 on known tables, precision/recall, confusion."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from engine.formats.plexus.metrics import agreement, gwet_ac1, normalise_label


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("Yes", "yes"),
        (" YES. ", "yes"),
        ("No!", "no"),
        ("Maybe?!", "maybe"),
        ("", "na"),
        ("nan", "na"),
        (float("nan"), "na"),
        ("N/A", "na"),
        ("None", "na"),
        ("null", "na"),
        (None, "na"),
        (True, "yes"),
        ("Not Relevant", "not relevant"),
    ],
)
def test_normalise_label(raw: object, expected: str) -> None:
    assert normalise_label(raw) == expected


def test_ac1_of_a_single_category_is_one() -> None:
    assert gwet_ac1([("yes", "yes")] * 7) == 1.0


def test_ac1_of_perfect_disagreement_is_minus_one() -> None:
    # pa = 0; pi_yes = pi_no = 0.5; pe = 0.5; AC1 = (0 - 0.5) / (1 - 0.5)
    assert gwet_ac1([("yes", "no"), ("no", "yes")] * 5) == -1.0


def test_ac1_of_the_paradox_table() -> None:
    # the classic kappa-paradox table: 118 agree on A, 5 A/B, 2 B/A, 0 agree on B (n = 125).
    # pa = 118/125 = 0.944; pi_A = (123 + 120) / 250 = 0.972; pe = 2 * 0.972 * 0.028 = 0.054432
    # AC1 = (0.944 - 0.054432) / (1 - 0.054432) = 0.94078 (Cohen's kappa is about -0.02 here)
    pairs = [("a", "a")] * 118 + [("a", "b")] * 5 + [("b", "a")] * 2
    assert gwet_ac1(pairs) == pytest.approx(0.940776, abs=1e-6)


def test_ac1_with_three_categories() -> None:
    # 6 pairs, 4 agree: pa = 2/3. Shares over 12 ratings: x 5/12, y 4/12, z 3/12.
    # pe = (5/12*7/12 + 4/12*8/12 + 3/12*9/12) / 2 = (35 + 32 + 27) / 288 = 94/288
    pairs = [("x", "x"), ("x", "x"), ("y", "y"), ("z", "z"), ("x", "y"), ("y", "z")]
    pe = 94 / 288
    assert gwet_ac1(pairs) == pytest.approx((2 / 3 - pe) / (1 - pe))


def test_ac1_without_pairs_is_none() -> None:
    assert gwet_ac1([]) is None


def test_agreement_reports_precision_recall_confusion_and_distributions() -> None:
    pairs = [("yes", "yes"), ("yes", "no"), ("no", "yes"), ("no", "no"), ("no", "no")]
    m = agreement("S", pairs, positive_class="Yes.", skipped=2, errors=1, unlabelled=3)
    assert (m.compared, m.skipped, m.errors, m.unlabelled, m.positive_class) == (5, 2, 1, 3, "yes")
    assert (m.accuracy, m.precision, m.recall) == (0.6, 0.5, 0.5)
    assert m.confusion == {"no": {"no": 2, "yes": 1}, "yes": {"no": 1, "yes": 1}}
    assert m.label_distribution == {"no": 3, "yes": 2}
    assert m.prediction_distribution == {"no": 3, "yes": 2}
    assert m.ac1 is not None and -1 <= m.ac1 <= 1


def test_precision_and_recall_are_none_without_positives() -> None:
    m = agreement("S", [("no", "no")], positive_class="yes")
    assert (m.precision, m.recall, m.accuracy) == (None, None, 1.0)
    assert not math.isnan(m.ac1 or 0.0)


@given(st.lists(st.tuples(st.sampled_from("abcd"), st.sampled_from("abcd")), min_size=1, max_size=60))
def test_ac1_stays_in_minus_one_to_one(pairs: list[tuple[str, str]]) -> None:
    value = gwet_ac1(pairs)
    assert value is not None and -1 - 1e-12 <= value <= 1 + 1e-12
    if all(label == predicted for label, predicted in pairs):
        assert value == pytest.approx(1.0)
