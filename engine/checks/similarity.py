"""Jaccard similarity of a new message against an agent's recent messages (the gate's algorithmic check).

TinyTroupe's ActionGenerator compares the *characters* of the new action with the *previous action only*.
We follow seed doc 001 instead: Jaccard similarity of normalised word-token **sets**
(:func:`engine.checks.tokens.token_set`) against each of the **last 5** messages, keeping the maximum.
Word sets ignore order, case, punctuation and repeated words; the gate fails a draft at similarity ≥ 0.6.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from engine.checks.tokens import RECENT_WINDOW, TokenizedMessage, check_positive, token_set


@dataclass(frozen=True, slots=True)
class SimilarityResult:
    """The highest similarity found and where.

    ``index`` is the position in the ``recent`` sequence as passed by the caller (not in the window) and
    ``most_similar`` that message's text. Both are None when no recent
    message shares a single token with the text (score 0.0), including when ``recent`` is empty.
    The earliest message wins a tie.
    """

    score: float
    most_similar: str | None
    index: int | None


NO_SIMILARITY = SimilarityResult(0.0, None, None)


def jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    """|a ∩ b| / |a ∪ b| in [0, 1]; two empty sets score 0.0 (nothing to compare is no sign of copying)."""
    shared = len(a & b)
    if not shared:
        return 0.0
    return shared / (len(a) + len(b) - shared)


def _best(candidate: frozenset[str], recent: Sequence[frozenset[str]], start: int) -> tuple[float, int | None]:
    # Plain frozenset intersections, no numpy: with ~30 distinct words per message, np.intersect1d over
    # pre-sorted arrays measured ~9x slower (44 µs against 5 µs for five messages) on the bench machine.
    best, where = 0.0, None
    size = len(candidate)
    for offset, other in enumerate(recent):
        shared = len(candidate & other)
        if shared:
            score = shared / (size + len(other) - shared)
            if score > best:
                best, where = score, start + offset
    return best, where


def max_jaccard(
    candidate: frozenset[str], recent: Sequence[frozenset[str]], *, window: int = RECENT_WINDOW
) -> tuple[float, int | None]:
    """Hot path on token sets: (highest Jaccard score, its index in ``recent``) over the last ``window``."""
    check_positive("window", window)
    start = max(len(recent) - window, 0)
    return _best(candidate, recent[start:], start)


def jaccard_similarity_tokenized(
    candidate: TokenizedMessage, recent: Sequence[TokenizedMessage], *, window: int = RECENT_WINDOW
) -> SimilarityResult:
    """:func:`jaccard_similarity` on messages tokenised once with :func:`engine.checks.tokens.prepare`."""
    check_positive("window", window)
    start = max(len(recent) - window, 0)
    score, index = _best(candidate.vocabulary, [m.vocabulary for m in recent[start:]], start)
    if index is None:
        return NO_SIMILARITY
    return SimilarityResult(score, recent[index].text, index)


def jaccard_similarity(text: str, recent: Sequence[str], *, window: int = RECENT_WINDOW) -> SimilarityResult:
    """Highest word-set Jaccard similarity of ``text`` against the last ``window`` (5) of ``recent``.

    Unlike TinyTroupe, which compares characters with the previous action only, this compares sets of
    normalised word tokens with each of the last five messages. Cold path: tokenises everything.
    The score is in [0, 1], symmetric in the two texts, 1.0 for texts with the same non-empty word set
    and 0.0 whenever either side has no word tokens.
    """
    check_positive("window", window)
    start = max(len(recent) - window, 0)
    score, index = _best(token_set(text), [token_set(m) for m in recent[start:]], start)
    if index is None:
        return NO_SIMILARITY
    return SimilarityResult(score, recent[index], index)


__all__ = [
    "NO_SIMILARITY",
    "SimilarityResult",
    "jaccard",
    "jaccard_similarity",
    "jaccard_similarity_tokenized",
    "max_jaccard",
]
