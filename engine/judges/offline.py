"""A heuristic judge that needs no model and no key: rough but meaningful numbers for demos and smoke runs.

It is clearly labelled (name ``offline-heuristic (no LLM)``, every reasoning starts with
``[offline heuristic]``) and fully deterministic. How it answers:

* **score** reads surface signals of the judged text (the draft action, or the whole trajectory in offline
  evaluation): words shared with the persona specification and with the claim, repeated word trigrams
  (against the agent's earlier messages for a draft; within the trajectory otherwise), generic stock
  phrases ("circle back", "synergy", …), bland agreement ("totally agree", "great idea") and very short
  messages. A claim that describes a *flaw* (generic, repetitive, dry, corporate, echoing…, the claims
  proposition files mark ``inverted``) starts at 1 and rises with evidence of the flaw; any other claim
  starts at 5 and rises with persona vocabulary, falling with the flaw signals. No text at all scores 9
  (missing data counts as true). An agent's whole trajectory (offline evaluation) scores as the rounded
  mean of its messages, each judged as a draft with what came before it, so a conversation's score and its
  per-message scores agree (summing every message's flaw signals used to sink long conversations).
* **check** handles two kinds of claim specially: claims about ideas (true when idea-like proposals occur in
  the last 10 events, or when none occur if the claim is negated) and claims about agreement (same with
  agreement phrases). Any other claim is true when its score would be at least 5.
* **enumerate** counts distinct idea-like sentences ("we could", "what if", "let's", "how about", "idea",
  …); sentences whose content words (no stop words) overlap by 60 % or more count once.

Limits: it reads words, not meaning. It cannot tell sarcasm, paraphrase or persona from topic; every claim
is classified as a flaw or a behaviour by its words alone; and its numbers are not comparable with an LLM's.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterable
from dataclasses import replace

from engine.judges.base import ClaimAnswer, JudgeMode, JudgeRequest, JudgeResult
from engine.models import EventKind

NAME = "offline-heuristic (no LLM)"
#: What every output judged by this judge says about it (issue 18, point 3).
LIMITS = (
    "offline heuristic judge (no LLM): it counts words — persona vocabulary, stock corporate phrases, bland "
    "agreement, repetition — and cannot read meaning, sarcasm or paraphrase; its scores run lower than an "
    "LLM's. Set ANTHROPIC_API_KEY to judge with Claude."
)
_LABEL = "[offline heuristic]"
_WORD = re.compile(r"[a-z0-9]+(?:'[a-z]+)?")
_SENTENCE = re.compile(r"[^.!?\n]+[.!?]?")
_STOPWORDS_TEXT = """
a an the and or but if then than so of to in on at by for with from about into over after before is are
was were
be been being am do does did have has had will would can could should may might must shall i you he she it we
they me him her us them my your his its our their this that these those there here what which who whom whose
when where why how all any each every some no not never very just also only as up out more most other such own
same too agent agents conversation message messages
"""
_STOPWORDS = frozenset(_STOPWORDS_TEXT.split())
_NEGATIONS = frozenset({"not", "no", "never", "none", "nobody", "nothing", "hasn't", "hadn't", "didn't"})
_GENERIC = (
    "circle back",
    "touch base",
    "synergy",
    "leverage",
    "going forward",
    "moving forward",
    "at the end of the day",
    "best practices",
    "low-hanging fruit",
    "win-win",
    "think outside the box",
    "as an ai",
    "great question",
    "happy to help",
    "i understand your concern",
)
_IDEA_MARKERS = ("we could", "what if", "let's", "how about", "idea", "i propose", "we should", "i suggest")
_AGREEMENT_MARKERS = ("i agree", "agreed", "exactly", "good point", "absolutely", "same here", "you're right")
_RECENT = 10


def words(text: str) -> list[str]:
    return _WORD.findall(text.lower())


def content_words(text: str) -> set[str]:
    return {w for w in words(text) if w not in _STOPWORDS and len(w) > 2}


def trigrams(text: str) -> list[tuple[str, ...]]:
    tokens = words(text)
    return [tuple(tokens[i : i + 3]) for i in range(len(tokens) - 2)]


def idea_sentences(text: str) -> list[str]:
    """Distinct idea-like sentences (near-duplicates, by content-word overlap >= 0.6, count once)."""
    kept: list[tuple[str, set[str]]] = []
    for match in _SENTENCE.finditer(text):
        sentence = match.group().strip()
        lowered = sentence.lower()
        if not any(marker in lowered for marker in _IDEA_MARKERS):
            continue
        bag = content_words(sentence)
        if any(_jaccard(bag, other) >= 0.6 for _, other in kept):
            continue
        kept.append((sentence, bag))
    return [sentence[:120] for sentence, _ in kept]


class OfflineJudge:
    """The no-LLM heuristic judge (see the module docstring for what it does and does not do)."""

    @property
    def name(self) -> str:
        return NAME

    def __repr__(self) -> str:
        return "OfflineJudge()"

    async def evaluate(self, request: JudgeRequest) -> JudgeResult:
        started = time.perf_counter()
        answers = tuple(self._answer(request, i) for i in range(len(request.claims)))
        return JudgeResult(answers=answers, judge=NAME, latency_ms=(time.perf_counter() - started) * 1000)

    def _answer(self, request: JudgeRequest, index: int) -> ClaimAnswer:
        claim = request.claims[index]
        if request.mode is JudgeMode.ENUMERATE:
            items = tuple(idea_sentences(request.judged_text()))
            reasoning = f"{_LABEL} {len(items)} distinct idea-like sentences found"
            return ClaimAnswer(claim.id, len(items), reasoning, items=items)
        value: int | bool
        if request.mode is JudgeMode.CHECK:
            value, reasoning = _check(request, claim.text)
        else:
            value, reasoning = _score(request, claim.text)
        return ClaimAnswer(claim.id, value, reasoning, first_value=value if request.double_check else None)


_FLAW_TEXT = """generic repeat repeats repeated repetitive dry contradict contradicts corporate breaks bland template
formulaic echo echoes echoing derail derails betray betrays assistant sudden parrot parrots copies flat
impersonal stock boilerplate agree agrees agreement single same"""
_FLAW_WORDS = frozenset(_FLAW_TEXT.split())
_AGREEMENT = re.compile(r"\b(agree[sd]?|totally|exactly|absolutely|same here|great idea|love it)\b")


def _is_flaw_claim(claim_text: str) -> bool:
    """Claims that describe a flaw (the anti-patterns that proposition files mark ``inverted``)."""
    return bool(set(words(claim_text)) & _FLAW_WORDS)


def _signals(request: JudgeRequest, claim_text: str) -> dict[str, float]:
    text = request.judged_text()
    names = content_words(f"{request.target_name} {request.agent_id or ''}")
    seen = content_words(text)
    claim_words = content_words(claim_text) - names
    persona = -1.0
    if request.persona is not None:
        persona = float(len((content_words(request.persona.render()) - names) & seen))
    return {
        "claim_cover": len(claim_words & seen) / len(claim_words) if claim_words else 0.0,
        "persona_words": persona,
        "repetition": _repetition(request),
        "stock_phrases": float(len([phrase for phrase in _GENERIC if phrase in text.lower()][:3])),
        "agreement": float(len(_AGREEMENT.findall(text.lower()))),
        "short": float(len(words(text)) < 8),
    }


def _flaw_score(sig: dict[str, float]) -> float:
    """How strongly the text shows a flaw: 1 with no evidence, up with each signal."""
    no_persona = 1.5 if sig["persona_words"] == 0 else 0.0
    return (
        1
        + 2 * sig["stock_phrases"]
        + 6 * sig["repetition"]
        + 1.5 * min(sig["agreement"], 2)
        + no_persona
        + sig["short"]
    )


def _virtue_score(sig: dict[str, float]) -> float:
    """How well the text shows a desirable behaviour: persona vocabulary up, flaws down."""
    persona_bonus = min(sig["persona_words"] / 2, 3.0) if sig["persona_words"] >= 0 else 0.0
    return (
        5 + persona_bonus + 2 * sig["claim_cover"] - 4 * sig["repetition"] - 1.5 * sig["stock_phrases"]
        - 1.5 * min(sig["agreement"], 2) - sig["short"]
    )  # fmt: skip


def _score(request: JudgeRequest, claim_text: str) -> tuple[int, str]:
    if not request.judged_text().strip():
        return 9, f"{_LABEL} there is no text to judge; missing data counts as true -> 9"
    if request.action is None and request.agent_id is not None:
        per_message = _per_message_scores(request, claim_text)
        if per_message:  # a conversation scores as its messages do, each judged with what came before it
            score = round(sum(per_message) / len(per_message))
            shown = ", ".join(map(str, per_message))
            return score, f"{_LABEL} mean of the scores of its {len(per_message)} messages ({shown}) -> {score}"
    return _message_score(request, claim_text)


def _per_message_scores(request: JudgeRequest, claim_text: str) -> list[int]:
    """The agent's messages in the trajectory, each scored as the gate scores a draft (issue 18, point 3)."""
    return [
        _message_score(replace(request, trajectory=request.trajectory[:i], action=e.text, first_part=0, omitted=0),
                       claim_text)[0]
        for i, e in enumerate(request.trajectory)
        if e.kind is EventKind.ACTION and e.agent_id == request.agent_id and e.text.strip()
    ]  # fmt: skip


def _message_score(request: JudgeRequest, claim_text: str) -> tuple[int, str]:
    sig = _signals(request, claim_text)
    flaw = _is_flaw_claim(claim_text)
    raw = _flaw_score(sig) if flaw else _virtue_score(sig)
    score = max(0, min(9, round(raw)))
    shown = ", ".join(f"{k} {v:.2g}" for k, v in sig.items() if v > 0)
    kind = "evidence of the flaw" if flaw else "evidence of the behaviour"
    return score, f"{_LABEL} {kind}: {shown or 'none'} -> {score}"


def _repetition(request: JudgeRequest) -> float:
    """Share of repeated word trigrams: the draft against earlier messages, or within the trajectory."""
    own = [
        e.text
        for e in request.trajectory
        if e.kind is EventKind.ACTION and (request.agent_id is None or e.agent_id == request.agent_id)
    ]
    if request.action is not None:
        current = set(trigrams(request.action))
        history = {t for text in own for t in trigrams(text)}
        return len(current & history) / len(current) if current else 0.0
    all_trigrams = [t for text in own for t in trigrams(text)]
    return 1 - len(set(all_trigrams)) / len(all_trigrams) if all_trigrams else 0.0


def _check(request: JudgeRequest, claim_text: str) -> tuple[bool, str]:
    claim_words = set(words(claim_text))
    negated = bool(claim_words & _NEGATIONS) or "n't" in claim_text.lower()
    recent = " ".join(e.text for e in request.trajectory[-_RECENT:])
    if request.action is not None:
        recent = f"{recent} {request.action}"
    for topic, markers in (("idea", _IDEA_MARKERS), ("agree", _AGREEMENT_MARKERS)):
        if any(w.startswith(topic) for w in claim_words):
            found = _found(recent, markers)
            value = not found if negated else found
            reasoning = (
                f"{_LABEL} {topic}-like phrases {'found' if found else 'not found'} in the last {_RECENT} "
                f"events{' (claim is negated)' if negated else ''} -> {str(value).lower()}"
            )
            return value, reasoning
    score, why = _score(request, claim_text)
    return score >= 5, f"{why}; true when >= 5"


def _found(text: str, markers: Iterable[str]) -> bool:
    lowered = text.lower()
    return any(marker in lowered for marker in markers)


def _jaccard(a: set[str], b: set[str]) -> float:
    return len(a & b) / len(a | b) if a or b else 1.0
