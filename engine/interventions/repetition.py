"""Repetition suppression: a purely algorithmic directive (no judge call) against recycled wording.

Before an agent acts, the word n-gram overlap of its last five messages is measured
(:func:`engine.checks.repetition`). When the overlap ratio is strictly above the agent's
``repetition_threshold``, the agent gets a ``repetition`` directive listing those messages and the exact
maximal phrases it keeps reusing (:func:`engine.checks.repeated_phrases`), so it can avoid them.
"""

from __future__ import annotations

from collections.abc import Sequence

from engine.checks import RECENT_WINDOW, repeated_phrases, repetition
from engine.errors import ConfigurationError
from engine.interventions.types import Directive, DirectiveKind

#: Longer recent messages are shortened in the directive text.
MAX_QUOTED_CHARS = 300


def _quote(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= MAX_QUOTED_CHARS else flat[: MAX_QUOTED_CHARS - 1] + "…"


def render_repetition_text(agent_name: str, recent: Sequence[str], phrases: Sequence[str]) -> str:
    """The directive an agent receives: its recent messages, then the phrases to stay away from."""
    lines = [f"{agent_name}, your recent messages keep reusing the same wording. Your last messages were:"]
    lines.extend(f'{i}. "{_quote(text)}"' for i, text in enumerate(recent, start=1))
    lines.append("Do not use any of these phrases in your next message:")
    lines.extend(f'- "{phrase}"' for phrase in phrases)
    lines.append("Say what you mean in fresh words, still in your own voice.")
    return "\n".join(lines)


def repetition_directive(
    agent_id: str, agent_name: str, recent_texts: Sequence[str], threshold: float, n: int = 3
) -> Directive | None:
    """A ``repetition`` directive when the n-gram overlap of the last 5 messages exceeds ``threshold``."""
    if isinstance(threshold, bool) or not 0 <= threshold <= 1:
        raise ConfigurationError(f"repetition_threshold must be between 0 and 1, not {threshold!r}")
    recent = list(recent_texts)[-RECENT_WINDOW:]
    result = repetition(recent, n, window=None)
    if result.ratio <= threshold:
        return None
    phrases = repeated_phrases(recent, n, window=None)
    evidence = (
        f"{n}-word overlap {result.ratio:.2f} > threshold {threshold:.2f} over the last {len(recent)} "
        f"messages; repeated: {', '.join(repr(p) for p in phrases)}"
    )
    return Directive(
        agent_id=agent_id,
        kind=DirectiveKind.REPETITION.value,
        text=render_repetition_text(agent_name, recent, phrases),
        evidence=evidence,
    )
