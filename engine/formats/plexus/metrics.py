"""Agreement of a score's predictions with human labels: accuracy, precision/recall, Gwet's AC1, confusion.

Labels and predictions are normalised the same way before comparison (:func:`normalise_label`). Gwet's AC1
for two raters over the categories either used: ``(pa - pe) / (1 - pe)`` with ``pa`` the observed agreement
and ``pe = Σ π_k (1 - π_k) / (q - 1)``, ``π_k`` the mean of the two raters' shares of category ``k`` and ``q``
the number of categories; with a single category every pair agrees and AC1 is 1.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

NA = "na"
_NA_WORDS = frozenset({"", "nan", "n/a", "na", "none", "null"})


def normalise_label(value: Any) -> str:
    """``"Yes."`` -> ``"yes"``; empty, NaN, ``n/a``, ``none``, ``null`` -> ``"na"``."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return NA
    if isinstance(value, bool):
        value = "yes" if value else "no"
    text = str(value).strip().lower().rstrip(".!?").strip()
    return NA if text in _NA_WORDS else text


def gwet_ac1(pairs: Sequence[tuple[str, str]]) -> float | None:
    """AC1 of (label, prediction) pairs, in [-1, 1]; None without pairs."""
    n = len(pairs)
    if n == 0:
        return None
    observed = sum(1 for label, predicted in pairs if label == predicted) / n
    counts = Counter(label for label, _ in pairs) + Counter(predicted for _, predicted in pairs)
    if len(counts) == 1:
        return 1.0
    chance = sum((c / (2 * n)) * (1 - c / (2 * n)) for c in counts.values()) / (len(counts) - 1)
    return (observed - chance) / (1 - chance)


@dataclass(frozen=True)
class Agreement:
    score: str
    positive_class: str
    compared: int
    skipped: int = 0
    errors: int = 0
    unlabelled: int = 0
    accuracy: float | None = None
    precision: float | None = None
    recall: float | None = None
    ac1: float | None = None
    #: confusion[label][prediction] = count
    confusion: dict[str, dict[str, int]] = field(default_factory=dict)
    label_distribution: dict[str, int] = field(default_factory=dict)
    prediction_distribution: dict[str, int] = field(default_factory=dict)

    def as_json(self) -> dict[str, Any]:
        return asdict(self)


def agreement(
    score: str,
    pairs: Sequence[tuple[str, str]],
    *,
    positive_class: str = "yes",
    skipped: int = 0,
    errors: int = 0,
    unlabelled: int = 0,
) -> Agreement:
    """Metrics over normalised (label, prediction) pairs; skipped / errored / unlabelled items are only counted."""
    positive = normalise_label(positive_class)
    n = len(pairs)
    true_pos = sum(1 for label, predicted in pairs if label == predicted == positive)
    predicted_pos = sum(1 for _, predicted in pairs if predicted == positive)
    labelled_pos = sum(1 for label, _ in pairs if label == positive)
    confusion: dict[str, dict[str, int]] = {}
    for label, predicted in pairs:
        row = confusion.setdefault(label, {})
        row[predicted] = row.get(predicted, 0) + 1
    return Agreement(
        score=score,
        positive_class=positive,
        compared=n,
        skipped=skipped,
        errors=errors,
        unlabelled=unlabelled,
        accuracy=sum(1 for label, predicted in pairs if label == predicted) / n if n else None,
        precision=true_pos / predicted_pos if predicted_pos else None,
        recall=true_pos / labelled_pos if labelled_pos else None,
        ac1=gwet_ac1(pairs),
        confusion={label: dict(sorted(row.items())) for label, row in sorted(confusion.items())},
        label_distribution=dict(sorted(Counter(label for label, _ in pairs).items())),
        prediction_distribution=dict(sorted(Counter(predicted for _, predicted in pairs).items())),
    )
