"""N-gram repetition across an agent's recent messages (repetition suppression and fluency evidence).

Definitions, for word n-grams (default n = 3) over the last ``window`` (5) messages, with tokens from
:func:`engine.checks.tokens.tokenize`:

* Each message contributes its set of *distinct* n-grams; an n-gram is **repeated** when it occurs in at
  least two different messages. Repetition inside a single message does not count: this check is about an
  agent recycling its own earlier wording.
* **ratio** = (number of (message, distinct n-gram) pairs whose n-gram is repeated) / (number of all such
  pairs). It is in [0, 1]: 0.0 when nothing recurs (or there are fewer than n tokens in every message),
  1.0 when every n-gram of every message also appears in another one (e.g. the same message sent twice).
* A **repeated phrase** is a token sequence of at least n tokens found in two or more messages. It is
  *maximal* when it cannot be extended by a word without losing one of the messages that contain it, i.e.
  no longer repeated phrase occurs in as many messages ("closed" in frequent-pattern terms). Overlapping
  n-grams therefore merge: "that's what she" + "what she said" become "that's what she said" when they
  occur in the same messages, while a shorter phrase that recurs in *more* messages is still reported (a
  catchphrase used in every message stays visible even if different words precede it each time).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from itertools import chain

from engine.checks.tokens import (
    RECENT_WINDOW,
    TokenizedMessage,
    check_positive,
    distinct_grams,
    last,
    ngrams,
    tokenize,
)
from engine.checks.vocabulary import distinct_n

Gram = tuple[str, ...]


@dataclass(frozen=True, slots=True)
class RepetitionResult:
    """``ratio`` in [0, 1] and the repeated n-grams (space-joined), most widespread first, then first seen."""

    ratio: float
    repeated: tuple[str, ...]


def repetition_of_grams(gram_lists: Sequence[Sequence[str]]) -> RepetitionResult:
    """Hot path: repetition of messages given as their *distinct* n-grams (``TokenizedMessage.grams``)."""
    # Set algebra in C first (the whole check takes about half the time it did counting every n-gram with a
    # Counter, measured); the per-gram Python work below only touches the few n-grams that recur.
    seen: set[str] = set()
    recurring: set[str] = set()
    for grams in gram_lists:
        recurring.update(seen.intersection(grams))
        seen.update(grams)
    if not recurring:
        return RepetitionResult(0.0, ())
    counts: dict[str, int] = {}
    first: dict[str, tuple[int, int]] = {}
    for i, grams in enumerate(gram_lists):
        for gram in recurring.intersection(grams):
            if gram in counts:
                counts[gram] += 1
            else:
                counts[gram], first[gram] = 1, (i, grams.index(gram))
    ordered = sorted(counts, key=lambda gram: (-counts[gram], first[gram]))
    return RepetitionResult(sum(counts.values()) / sum(map(len, gram_lists)), tuple(ordered))


def repetition_of_tokens(token_lists: Sequence[Sequence[str]], n: int = 3) -> RepetitionResult:
    """:func:`repetition` on already tokenised messages (all of ``token_lists`` are used)."""
    check_positive("n", n)
    return repetition_of_grams([distinct_grams(tokens, n) for tokens in token_lists])


def repetition_tokenized(
    messages: Sequence[TokenizedMessage], n: int = 3, *, window: int | None = RECENT_WINDOW
) -> RepetitionResult:
    """:func:`repetition` on messages prepared once with :func:`engine.checks.tokens.prepare` (hot path)."""
    check_positive("n", n)
    return repetition_of_grams([m.grams(n) for m in last(messages, window)])


def repetition(messages: Sequence[str], n: int = 3, *, window: int | None = RECENT_WINDOW) -> RepetitionResult:
    """N-gram repetition across the last ``window`` of ``messages`` (see the module docstring)."""
    return repetition_of_tokens([tokenize(m) for m in last(messages, window)], n)


Place = tuple[int, int]  # (message index, token position)


def _repeated(phrases: dict[Gram, list[Place]]) -> dict[Gram, list[Place]]:
    # Places are appended in (message, position) order, so two messages are involved iff the ends differ.
    return {p: places for p, places in phrases.items() if places[0][0] != places[-1][0]}


def _levels(lists: Sequence[Gram], n: int) -> Iterator[dict[Gram, list[Place]]]:
    """The repeated phrases of length n, n+1, ... with their places, each level grown from the previous one.

    Growing occurrences one token to the right keeps the work linear in the number of occurrences of
    repeated phrases, instead of quadratic as comparing every pair of messages would be.
    """
    start: dict[Gram, list[Place]] = {}
    for i, tokens in enumerate(lists):
        for p, gram in enumerate(ngrams(tokens, n)):
            start.setdefault(gram, []).append((i, p))
    level, size = _repeated(start), n
    while level:
        yield level
        grown: dict[Gram, list[Place]] = {}
        for phrase, places in level.items():
            for i, p in places:
                if p + size < len(lists[i]):
                    grown.setdefault((*phrase, lists[i][p + size]), []).append((i, p))
        level, size = _repeated(grown), size + 1


def phrase_counts(token_lists: Sequence[Sequence[str]], n: int = 3) -> list[tuple[str, int]]:
    """Maximal repeated phrases with the number of messages containing each (see the module docstring).

    Ordered by that number (descending), then by first occurrence (message, then position).
    """
    check_positive("n", n)
    found: list[tuple[str, int, Place]] = []
    previous: dict[Gram, int] = {}
    first: dict[Gram, Place] = {}
    for level in chain(_levels([tuple(t) for t in token_lists], n), [{}]):
        support = {phrase: len({i for i, _ in places}) for phrase, places in level.items()}
        # Enough to look one word further: a longer phrase with equal support implies a one-word one.
        absorbed = {q[:-1] for q, c in support.items() if previous.get(q[:-1]) == c}
        absorbed.update(q[1:] for q, c in support.items() if previous.get(q[1:]) == c)
        found.extend((" ".join(p), c, first[p]) for p, c in previous.items() if p not in absorbed)
        previous, first = support, {phrase: places[0] for phrase, places in level.items()}
    found.sort(key=lambda item: (-item[1], item[2]))
    return [(phrase, count) for phrase, count, _ in found]


def repeated_phrases(messages: Sequence[str], n: int = 3, *, window: int | None = RECENT_WINDOW) -> tuple[str, ...]:
    """Maximal repeated phrases (≥ n words, in ≥ 2 of the last ``window`` messages) for an agent to avoid.

    See the module docstring for "maximal".

    Ordered by the number of messages containing the phrase (descending), then by first occurrence.
    """
    return tuple(p for p, _ in phrase_counts([tokenize(m) for m in last(messages, window)], n))


@dataclass(frozen=True, slots=True)
class NgramStats:
    """N-gram evidence about one agent's recent messages: supplementary text for the fluency judge."""

    n: int
    messages: int
    repetition_ratio: float
    top_repeated: tuple[tuple[str, int], ...]  # (maximal phrase, messages containing it)
    distinct_2: float

    def render(self) -> str:
        """A short plain-text summary for a judge prompt."""
        lines = [
            f"Word n-gram statistics over the agent's last {self.messages} message(s):",
            f"- share of {self.n}-word sequences that recur in another message: {self.repetition_ratio:.2f}",
            f"- distinct-2 (unique word pairs / all word pairs): {self.distinct_2:.2f}",
        ]
        if self.top_repeated:
            phrases = "; ".join(f'"{p}" ({c} messages)' for p, c in self.top_repeated)
            lines.append(f"- most repeated phrases: {phrases}")
        else:
            lines.append("- no phrase recurs across messages")
        return "\n".join(lines)


def ngram_stats(messages: Sequence[str], *, n: int = 3, window: int | None = RECENT_WINDOW, top: int = 5) -> NgramStats:
    """Repetition ratio, the ``top`` maximal repeated phrases, distinct-2 of the last ``window`` messages."""
    check_positive("top", top)
    recent = last(messages, window)
    token_lists = [tokenize(m) for m in recent]
    ratio = repetition_of_tokens(token_lists, n).ratio
    phrases = tuple(phrase_counts(token_lists, n)[:top])
    return NgramStats(n, len(recent), ratio, phrases, distinct_n(recent, 2))


__all__ = [
    "NgramStats",
    "RepetitionResult",
    "ngram_stats",
    "phrase_counts",
    "repeated_phrases",
    "repetition",
    "repetition_of_grams",
    "repetition_of_tokens",
    "repetition_tokenized",
]
