"""Named precondition functions a proposition may reference (YAML holds names, never code).

A precondition receives the judged target's events, the additional context and the claim's template
variables, and returns whether the proposition applies. A false precondition makes the proposition
trivially true: score 9 and no judge call.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from engine.models import Event, EventKind

Precondition = Callable[[Sequence[Event], Mapping[str, str], Mapping[str, str]], bool]

_REGISTRY: dict[str, Precondition] = {}


def register_precondition(name: str) -> Callable[[Precondition], Precondition]:
    """Decorator: make ``fn`` available to proposition files as ``precondition: <name>``."""

    def decorate(fn: Precondition) -> Precondition:
        _REGISTRY[name] = fn
        return fn

    return decorate


def get_precondition(name: str) -> Precondition | None:
    return _REGISTRY.get(name)


def precondition_names() -> tuple[str, ...]:
    return tuple(sorted(_REGISTRY))


@register_precondition("has_prior_actions")
def has_prior_actions(events: Sequence[Event], context: Mapping[str, str], variables: Mapping[str, str]) -> bool:
    """True when the target has at least one committed action before the judged one. With ``agent_id`` in the
    context (a conversation trajectory that holds other agents' messages too), only that agent's actions count."""
    agent = context.get("agent_id")
    return any(e.kind is EventKind.ACTION and (agent is None or e.agent_id == agent) for e in events)


@register_precondition("is_direct_message")
def is_direct_message(events: Sequence[Event], context: Mapping[str, str], variables: Mapping[str, str]) -> bool:
    """True when the judged message goes to a single recipient (a DM)."""
    return bool(variables.get("recipient_name"))


@register_precondition("in_channel")
def in_channel(events: Sequence[Event], context: Mapping[str, str], variables: Mapping[str, str]) -> bool:
    """True when the judged message is posted to a channel rather than a DM."""
    return bool(variables.get("channel_name")) and not variables.get("recipient_name")
