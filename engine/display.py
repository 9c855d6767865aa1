"""How human output shows scores and outcomes: one rule everywhere (JSON keeps exact values and wire names).

* Scores (0–9 rubric, similarities 0–1) are shown with two decimals: ``score_text(6.666…) == "6.67"``.
* Outcomes keep their wire values on topics, in JSON and in the database; people read a label. The gate's
  ``corrected`` means "a check failed, feedback was sent and a regeneration was asked for": nothing has been
  corrected yet, so it reads ``retry requested``.
"""

from __future__ import annotations

SCORE_DECIMALS = 2

OUTCOME_LABELS: dict[str, str] = {
    "passed": "passed",
    "passed_after_retry": "passed after retry",
    "corrected": "retry requested",
    "forced_through": "forced through",
    "timeout_pass_through": "timed out, passed through",
    "rejected": "rejected",
    "skipped": "skipped (silence)",
    "not_gated_yet": "not gated yet",
}


def score_text(value: float | None) -> str:
    """A score for people: two decimals, ``-`` when there is none."""
    return "-" if value is None else f"{value:.{SCORE_DECIMALS}f}"


def outcome_label(outcome: str) -> str:
    """The words for an outcome's wire value (unknown values are shown as they are)."""
    return OUTCOME_LABELS.get(outcome, outcome)
