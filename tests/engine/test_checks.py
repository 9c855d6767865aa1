"""Algorithmic checks: tokenisation, Jaccard similarity, n-gram repetition and vocabulary statistics."""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from engine.checks import (
    RECENT_WINDOW,
    distinct_n,
    jaccard,
    jaccard_similarity,
    jaccard_similarity_tokenized,
    max_jaccard,
    ngram_stats,
    ngrams,
    pairwise_vocabulary_overlap,
    phrase_counts,
    prepare,
    repeated_phrases,
    repetition,
    repetition_tokenized,
    token_set,
    tokenize,
    type_token_ratio,
    vocabulary_stats,
)
from engine.errors import ConfigurationError

# Timing is not what these properties test; a loaded CI machine must not turn them flaky.
relaxed = settings(deadline=None)

VOCABULARY = (
    "we",
    "should",
    "sell",
    "more",
    "coffee",
    "don't",
    "think",
    "that's",
    "what",
    "she",
    "said",
    "café",
)
words = st.lists(st.sampled_from(VOCABULARY), max_size=25)
texts = words.map(" ".join)
histories = st.lists(texts, max_size=8)
any_text = st.text(max_size=80)
MessageFactory = Callable[..., str]


@pytest.fixture
def make_message() -> MessageFactory:
    """Deterministic ~40-word messages from a seeded generator."""
    rng = random.Random(7)
    pool = ("sales", "team", "paper", "quarter", "client", "deal", "office", "numbers", "call", "today")

    def make(length: int = 40) -> str:
        return " ".join(rng.choice(pool) for _ in range(length))

    return make


def _grams(text: str, n: int) -> set[str]:
    return {" ".join(g) for g in ngrams(tokenize(text), n)}


def _noisy(tokens: Sequence[str], rng: random.Random) -> str:
    """The same tokens with random case, punctuation and whitespace between them."""
    separators = ("  ", ", ", "! ", " -- ", "\n", "; ", "...")
    out = []
    for token in tokens:
        out.append(token.upper() if rng.random() < 0.5 else token.title())
        out.append(rng.choice(separators))
    return "".join(out)


# --- tokenisation ---------------------------------------------------------------------------------------


def test_tokenize_keeps_inner_apostrophes_and_drops_punctuation() -> None:
    assert tokenize("Don't STOP—believin’! 'Tis the players' café, naïve 東京 2024") == (
        "don't", "stop", "believin", "tis", "the", "players", "café", "naïve", "東京", "2024",
    )  # fmt: skip


def test_typographic_apostrophes_match_the_ascii_one() -> None:
    assert tokenize("I don’t know") == tokenize("i DON'T know") == ("i", "don't", "know")


@relaxed
@given(words, st.integers(0, 2**32))
def test_case_punctuation_and_whitespace_do_not_change_tokens(tokens: list[str], seed: int) -> None:
    assert tokenize(_noisy(tokens, random.Random(seed))) == tuple(tokens)


def test_prepare_caches_distinct_grams_in_first_seen_order() -> None:
    message = prepare("a b c a b c d")
    assert message.grams(3) == ("a b c", "b c a", "c a b", "b c d")
    assert message.grams(3) is message.grams(3)
    assert message.vocabulary == frozenset("abcd")


# --- Jaccard similarity ---------------------------------------------------------------------------------


@relaxed
@given(any_text, st.lists(any_text, max_size=7))
def test_similarity_is_a_maximum_in_unit_interval(text: str, recent: list[str]) -> None:
    result = jaccard_similarity(text, recent)
    assert 0.0 <= result.score <= 1.0
    window = recent[-RECENT_WINDOW:]
    assert result.score == max((jaccard(token_set(text), token_set(m)) for m in window), default=0.0)
    if result.index is not None:
        assert result.most_similar == recent[result.index]
        assert result.index >= len(recent) - RECENT_WINDOW
        assert jaccard(token_set(text), token_set(recent[result.index])) == result.score


@relaxed
@given(any_text, any_text)
def test_similarity_is_symmetric(a: str, b: str) -> None:
    assert jaccard_similarity(a, [b]).score == jaccard_similarity(b, [a]).score


@relaxed
@given(texts)
def test_identical_text_scores_one(text: str) -> None:
    assume(tokenize(text))
    assert jaccard_similarity(text, ["unrelated words", text]).score == 1.0


@relaxed
@given(words, texts, st.randoms(use_true_random=False))
def test_word_order_and_noise_do_not_change_similarity(tokens: list[str], other: str, rng: random.Random) -> None:
    shuffled = list(tokens)
    rng.shuffle(shuffled)
    assert (
        jaccard_similarity(_noisy(shuffled, rng), [other]).score == jaccard_similarity(" ".join(tokens), [other]).score
    )


@relaxed
@given(texts, st.lists(texts, min_size=RECENT_WINDOW, max_size=8), st.lists(texts, min_size=1, max_size=3))
def test_only_the_last_five_messages_count(text: str, recent: list[str], older: list[str]) -> None:
    plain, padded = jaccard_similarity(text, recent), jaccard_similarity(text, older + recent)
    assert padded.score == plain.score
    assert padded.index == (None if plain.index is None else plain.index + len(older))


@relaxed
@given(texts, histories)
def test_hot_path_matches_cold_path(text: str, recent: list[str]) -> None:
    hot = jaccard_similarity_tokenized(prepare(text), [prepare(m) for m in recent])
    assert hot == jaccard_similarity(text, recent)
    assert max_jaccard(token_set(text), [token_set(m) for m in recent]) == (hot.score, hot.index)


def test_empty_inputs_give_zero_and_no_match() -> None:
    assert jaccard_similarity("", [""]) == jaccard_similarity("...", []) == jaccard_similarity("hi", ["!!"])
    assert jaccard_similarity("", ["", "x"]).score == 0.0
    assert jaccard_similarity("", [""]).index is None


def test_similarity_reports_the_earliest_best_message() -> None:
    result = jaccard_similarity("we sell coffee", ["we sell tea", "tea please", "coffee we sell", "we sell coffee"])
    assert (result.score, result.index, result.most_similar) == (1.0, 2, "coffee we sell")
    assert jaccard_similarity("a b c d", ["a b x y"]).score == pytest.approx(2 / 6)


def test_bad_window_is_a_configuration_error() -> None:
    with pytest.raises(ConfigurationError, match="window"):
        jaccard_similarity("a", ["a"], window=0)


# --- repetition -----------------------------------------------------------------------------------------


@relaxed
@given(histories, st.integers(1, 4))
def test_repetition_ratio_and_repeated_grams_follow_the_definition(messages: list[str], n: int) -> None:
    window = messages[-RECENT_WINDOW:]
    per_message = [_grams(m, n) for m in window]
    counts = {g: sum(g in grams for grams in per_message) for grams in per_message for g in grams}
    result = repetition(messages, n)
    assert 0.0 <= result.ratio <= 1.0
    assert set(result.repeated) == {g for g, c in counts.items() if c >= 2}
    frequencies = [counts[g] for g in result.repeated]
    assert frequencies == sorted(frequencies, reverse=True)
    total = sum(counts.values())
    assert result.ratio == pytest.approx(sum(c for c in counts.values() if c >= 2) / total if total else 0.0)


@relaxed
@given(histories, st.randoms(use_true_random=False))
def test_repetition_ignores_message_order_case_and_punctuation(messages: list[str], rng: random.Random) -> None:
    window = messages[-RECENT_WINDOW:]
    reordered = [_noisy(tokenize(m), rng) for m in window]
    rng.shuffle(reordered)
    a, b = repetition(window), repetition(reordered)
    assert a.ratio == pytest.approx(b.ratio)
    assert set(a.repeated) == set(b.repeated)


@relaxed
@given(histories)
def test_repetition_hot_path_matches_cold_path(messages: list[str]) -> None:
    assert repetition_tokenized([prepare(m) for m in messages]) == repetition(messages)


def test_repetition_hand_example() -> None:
    messages = ["we sell more paper", "they sell more paper", "coffee is good"]
    # 3-grams per message: 2, 2, 1 = 5 pairs; "sell more paper" is in two messages -> 2 of 5.
    assert repetition(messages) == repetition(messages, 3)
    assert repetition(messages).ratio == pytest.approx(0.4)
    assert repetition(messages).repeated == ("sell more paper",)


def test_repeated_grams_are_ordered_by_frequency_then_first_occurrence() -> None:
    messages = ["x y z a b c", "a b c x y z q", "p q r x y z"]
    assert repetition(messages).repeated == ("x y z", "a b c")


def test_same_message_twice_is_full_repetition(make_message: MessageFactory) -> None:
    message = make_message()
    assert repetition([message, message]).ratio == 1.0
    assert repetition([message]).ratio == 0.0
    assert repetition(["too short", "too short"]).ratio == 0.0


def test_only_the_last_five_messages_are_checked(make_message: MessageFactory) -> None:
    old = make_message()
    fresh = [make_message() for _ in range(RECENT_WINDOW)]
    assert repetition([old, old, *fresh]) == repetition(fresh)
    assert repetition([old, old, *fresh], window=None).ratio > repetition(fresh).ratio


def test_repeated_phrases_merge_overlapping_ngrams() -> None:
    messages = ["well, that's what she said!", "That's what she said, honestly", "fresh words only"]
    assert set(repetition(messages).repeated) == {"that's what she", "what she said"}
    assert repeated_phrases(messages) == ("that's what she said",)


def test_a_more_widespread_sub_phrase_is_kept() -> None:
    messages = ["well, that's what she said!", "That's what she said, honestly", "what she said was fine"]
    expected = [("what she said", 3), ("that's what she said", 2)]
    assert phrase_counts([tokenize(m) for m in messages]) == expected
    catchphrase = [f"{opener} we sell paper" for opener in ("so", "so", "and", "and", "look")]
    assert repeated_phrases(catchphrase) == ("we sell paper", "so we sell paper", "and we sell paper")


def _brute_force_phrases(messages: list[str], n: int) -> dict[str, int]:
    """Every token run of >= n words in >= 2 messages that no longer run in as many messages contains."""
    padded = [f" {' '.join(tokenize(m))} " for m in messages]
    runs = {
        " ".join(tokens[i:j])
        for tokens in (tokenize(m) for m in messages)
        for i in range(len(tokens))
        for j in range(i + n, len(tokens) + 1)
    }
    spread = {r: sum(f" {r} " in m for m in padded) for r in runs}
    repeated = {r for r, c in spread.items() if c >= 2}
    return {
        r: spread[r]
        for r in repeated
        if not any(r != o and f" {r} " in f" {o} " and spread[o] == spread[r] for o in repeated)
    }


@relaxed
@given(st.lists(st.lists(st.sampled_from("abc"), max_size=9).map(" ".join), max_size=5), st.integers(1, 3))
def test_repeated_phrases_match_a_brute_force_reference(messages: list[str], n: int) -> None:
    expected = _brute_force_phrases(messages, n)
    counted = phrase_counts([tokenize(m) for m in messages], n)
    assert dict(counted) == expected
    assert [c for _, c in counted] == sorted(expected.values(), reverse=True)


@relaxed
@given(histories, st.integers(2, 4))
def test_every_repeated_gram_lies_in_a_reported_phrase(messages: list[str], n: int) -> None:
    phrases = repeated_phrases(messages, n)
    assert len(set(phrases)) == len(phrases)
    for gram in repetition(messages, n).repeated:
        assert any(f" {gram} " in f" {p} " for p in phrases)


def test_bad_n_is_a_configuration_error() -> None:
    with pytest.raises(ConfigurationError, match="n must be a positive integer"):
        repetition(["a b c"], 0)
    with pytest.raises(ConfigurationError):
        repetition_tokenized([prepare("a b c")], -1)


# --- vocabulary statistics ------------------------------------------------------------------------------


def test_type_token_ratio_and_distinct_n() -> None:
    assert type_token_ratio(["a", "b", "a", "c"]) == 0.75
    assert type_token_ratio([]) == 0.0
    # bigrams: (a b) (b a) (a b) | (a b) -> 2 distinct of 4; n-grams never cross the two texts
    assert distinct_n(["a b a b", "a b"], 2) == 0.5
    assert distinct_n(["a"], 2) == 0.0
    assert distinct_n(["a b", "A, B!"], 1) == 0.5


@relaxed
@given(st.dictionaries(st.sampled_from(("ann", "bob", "cy", "di")), st.lists(texts, max_size=3)))
def test_pairwise_overlap_matches_set_jaccard(by_agent: dict[str, list[str]]) -> None:
    overlap = pairwise_vocabulary_overlap(by_agent)
    vocab = {a: frozenset(t for m in ms for t in tokenize(m)) for a, ms in by_agent.items()}
    assert len(overlap.matrix) == len(by_agent) * (len(by_agent) - 1) // 2
    for (a, b), value in overlap.matrix.items():
        assert value == pytest.approx(jaccard(vocab[a], vocab[b]))
        assert overlap.between(b, a) == value
    if len(by_agent) < 2:
        assert overlap.mean is None
    else:
        assert overlap.mean == pytest.approx(sum(overlap.matrix.values()) / len(overlap.matrix))


def test_overlap_of_unknown_pair_is_a_configuration_error() -> None:
    with pytest.raises(ConfigurationError, match="ann"):
        pairwise_vocabulary_overlap({"ann": ["hi"], "bob": ["hi"]}).between("ann", "zed")


def test_vocabulary_stats_render_summarises_the_evidence() -> None:
    stats = vocabulary_stats({"ann": ["we sell paper", "paper is great"], "bob": ["we sell paper too"], "cy": []})
    assert stats.type_token_ratio == {"ann": pytest.approx(5 / 6), "bob": 1.0, "cy": 0.0}
    # ann {we sell paper is great} vs bob {we sell paper too}: 3 shared of 6; cy shares nothing
    assert stats.mean_overlap == pytest.approx((3 / 6 + 0 + 0) / 3)
    text = stats.render()
    assert "3 message(s) from 3 agent(s)" in text
    assert "ann / bob at 0.50" in text and ": 0.17;" in text
    assert "n/a" in vocabulary_stats({"solo": ["hello there"]}).render()


def test_ngram_stats_render_names_the_repeated_phrases() -> None:
    messages = ["well, that's what she said!", "That's what she said, honestly", "fresh words only"]
    stats = ngram_stats(messages)
    assert stats.top_repeated == (("that's what she said", 2),)
    assert stats.repetition_ratio == repetition(messages).ratio
    assert stats.distinct_2 == distinct_n(messages, 2)
    assert '"that\'s what she said" (2 messages)' in stats.render()
    assert "no phrase recurs" in ngram_stats(["one two three", "four five six"]).render()
