"""Vocabulary statistics for the convergence (voice divergence) and fluency judges' supplementary evidence.

All counts use the shared normalisation of :mod:`engine.checks.tokens`. n-grams never cross message
boundaries. Every ratio is 0.0 when its denominator is empty, so empty inputs never divide by zero.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import combinations
from statistics import fmean
from typing import TYPE_CHECKING

from engine.checks.tokens import check_positive, ngrams, tokenize
from engine.errors import ConfigurationError

if TYPE_CHECKING:
    import numpy as np


def type_token_ratio(tokens: Sequence[str]) -> float:
    """Distinct tokens / all tokens (0.0 for no tokens). Falls as a text grows, so compare like with like."""
    return len(set(tokens)) / len(tokens) if tokens else 0.0


def distinct_n(texts: Sequence[str], n: int) -> float:
    """Distinct word n-grams / all word n-grams over ``texts`` (0.0 when no text has n tokens)."""
    check_positive("n", n)
    seen: set[tuple[str, ...]] = set()
    total = 0
    for text in texts:
        grams = list(ngrams(tokenize(text), n))
        total += len(grams)
        seen.update(grams)
    return len(seen) / total if total else 0.0


@dataclass(frozen=True)
class VocabularyOverlap:
    """Jaccard similarity of the agents' vocabulary sets for every pair of agents.

    ``matrix`` maps ``(a, b)`` to the overlap for each unordered pair once, with ``a`` before ``b`` in
    ``agents`` order; :meth:`between` looks a pair up in either order. ``mean`` is None with fewer than two
    agents. Two agents without any word score 0.0. The matrix is a dict, so this value is not hashable.
    """

    agents: tuple[str, ...]
    matrix: dict[tuple[str, str], float]
    mean: float | None

    def between(self, a: str, b: str) -> float:
        """The overlap of two different agents, named in either order."""
        for key in ((a, b), (b, a)):
            if key in self.matrix:
                return self.matrix[key]
        raise ConfigurationError(f"no vocabulary overlap for the pair {a!r} / {b!r}")

    def most_similar_pair(self) -> tuple[str, str, float] | None:
        """The pair with the highest overlap (first in ``agents`` order on ties), None with < 2 agents."""
        if not self.matrix:
            return None
        (a, b), value = max(self.matrix.items(), key=lambda item: item[1])
        return a, b, value


def _jaccard_matrix(vocabularies: Sequence[frozenset[str]]) -> np.ndarray:
    """Agents x agents Jaccard matrix from one incidence-matrix product (numpy pays off past a few agents; imported
    here, not with the module, which every worker imports through the checks)."""
    import numpy as np

    index = {word: i for i, word in enumerate(sorted(set().union(*vocabularies)))}
    incidence = np.zeros((len(vocabularies), len(index)), dtype=np.float64)
    for row, vocabulary in enumerate(vocabularies):
        incidence[row, [index[w] for w in vocabulary]] = 1.0
    shared = incidence @ incidence.T
    sizes = np.diag(shared)
    union = sizes[:, None] + sizes[None, :] - shared
    return np.divide(shared, union, out=np.zeros_like(shared), where=union > 0)


def pairwise_vocabulary_overlap(by_agent: Mapping[str, Sequence[str]]) -> VocabularyOverlap:
    """Jaccard overlap of the word sets of each pair of agents (``by_agent`` maps agent → its messages)."""
    agents = tuple(by_agent)
    vocabularies = [frozenset(t for message in by_agent[a] for t in tokenize(message)) for a in agents]
    if len(agents) < 2:
        return VocabularyOverlap(agents, {}, None)
    values = _jaccard_matrix(vocabularies)
    matrix = {(agents[i], agents[j]): float(values[i, j]) for i, j in combinations(range(len(agents)), 2)}
    return VocabularyOverlap(agents, matrix, fmean(matrix.values()))


@dataclass(frozen=True)
class VocabularyStats:
    """Vocabulary evidence about a conversation, handed to the convergence judge as supplementary text."""

    type_token_ratio: dict[str, float]
    distinct_1: float
    distinct_2: float
    overlap: VocabularyOverlap
    messages: int

    @property
    def mean_overlap(self) -> float | None:
        return self.overlap.mean

    def render(self) -> str:
        """A short plain-text summary for a judge prompt."""
        ttr = ", ".join(f"{agent} {value:.2f}" for agent, value in self.type_token_ratio.items()) or "none"
        lines = [
            f"Vocabulary statistics, {self.messages} message(s) from {len(self.type_token_ratio)} agent(s):",
            f"- type-token ratio per agent: {ttr}",
            f"- distinct-1 / distinct-2 over all messages: {self.distinct_1:.2f} / {self.distinct_2:.2f}",
        ]
        pair = self.overlap.most_similar_pair()
        if self.overlap.mean is None or pair is None:
            lines.append("- pairwise vocabulary overlap: n/a (fewer than two agents)")
        else:
            lines.append(
                f"- mean pairwise vocabulary overlap (Jaccard of word sets; higher = more alike): "
                f"{self.overlap.mean:.2f}; closest pair {pair[0]} / {pair[1]} at {pair[2]:.2f}"
            )
        return "\n".join(lines)


def vocabulary_stats(by_agent: Mapping[str, Sequence[str]]) -> VocabularyStats:
    """Per-agent type-token ratio, distinct-1/2 over every message, and pairwise vocabulary overlap."""
    ttr = {a: type_token_ratio([t for m in texts for t in tokenize(m)]) for a, texts in by_agent.items()}
    everything = [message for messages in by_agent.values() for message in messages]
    return VocabularyStats(
        type_token_ratio=ttr,
        distinct_1=distinct_n(everything, 1),
        distinct_2=distinct_n(everything, 2),
        overlap=pairwise_vocabulary_overlap(by_agent),
        messages=len(everything),
    )


__all__ = [
    "VocabularyOverlap",
    "VocabularyStats",
    "distinct_n",
    "pairwise_vocabulary_overlap",
    "type_token_ratio",
    "vocabulary_stats",
]
