"""Algorithmic checks (no LLM): word-set similarity, n-gram repetition and vocabulary statistics.

Pure functions returning frozen values. Every check shares one normalisation
(:mod:`engine.checks.tokens`). Hot paths take messages tokenised once with :func:`prepare`, so a caller that
keeps an agent's last five messages can cache their tokens and pay only for the new message.
"""

from engine.checks.repetition import (
    NgramStats,
    RepetitionResult,
    ngram_stats,
    phrase_counts,
    repeated_phrases,
    repetition,
    repetition_of_grams,
    repetition_of_tokens,
    repetition_tokenized,
)
from engine.checks.similarity import (
    NO_SIMILARITY,
    SimilarityResult,
    jaccard,
    jaccard_similarity,
    jaccard_similarity_tokenized,
    max_jaccard,
)
from engine.checks.tokens import (
    RECENT_WINDOW,
    TokenizedMessage,
    distinct_grams,
    ngrams,
    prepare,
    token_set,
    tokenize,
)
from engine.checks.vocabulary import (
    VocabularyOverlap,
    VocabularyStats,
    distinct_n,
    pairwise_vocabulary_overlap,
    type_token_ratio,
    vocabulary_stats,
)

__all__ = [
    "NO_SIMILARITY",
    "RECENT_WINDOW",
    "NgramStats",
    "RepetitionResult",
    "SimilarityResult",
    "TokenizedMessage",
    "VocabularyOverlap",
    "VocabularyStats",
    "distinct_grams",
    "distinct_n",
    "jaccard",
    "jaccard_similarity",
    "jaccard_similarity_tokenized",
    "max_jaccard",
    "ngram_stats",
    "ngrams",
    "pairwise_vocabulary_overlap",
    "phrase_counts",
    "prepare",
    "repeated_phrases",
    "repetition",
    "repetition_of_grams",
    "repetition_of_tokens",
    "repetition_tokenized",
    "token_set",
    "tokenize",
    "type_token_ratio",
    "vocabulary_stats",
]
