"""Functional preconditions: plain callables ``(context) -> bool``, made by named, parameterised factories.

Intervention files reference a factory by name with its parameters (``min_messages: 7`` or
``min_messages: {n: 7}``); code calls the factory directly (``min_messages(7)``). Factories validate their
parameters and raise :class:`ConfigurationError` on bad values.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from engine.errors import ConfigurationError
from engine.interventions.types import StepContext

FunctionalPrecondition = Callable[[StepContext], bool]
Factory = Callable[..., FunctionalPrecondition]

_FACTORIES: dict[str, Factory] = {}


@dataclass(frozen=True, slots=True)
class NamedFunctional:
    """A functional precondition that remembers how it was made (for evidence and error messages)."""

    label: str
    fn: FunctionalPrecondition

    def __call__(self, context: StepContext) -> bool:
        return bool(self.fn(context))


def register_functional(name: str) -> Callable[[Factory], Factory]:
    """Decorator: make a factory available to intervention files as ``<name>: <parameters>``."""

    def decorate(factory: Factory) -> Factory:
        _FACTORIES[name] = factory
        return factory

    return decorate


def functional_names() -> tuple[str, ...]:
    return tuple(sorted(_FACTORIES))


def make_functional(name: str, params: Any = None) -> NamedFunctional:
    """Build the precondition ``name`` from file parameters: None, a mapping (keywords) or one value."""
    factory = _FACTORIES.get(name)
    if factory is None:
        raise ConfigurationError(f"unknown functional precondition {name!r}")
    try:
        if params is None:
            made = factory()
        elif isinstance(params, Mapping):
            made = factory(**params)
        else:
            made = factory(params)
    except TypeError as exc:
        raise ConfigurationError(f"bad parameters for {name}: {exc}") from exc
    return made if isinstance(made, NamedFunctional) else NamedFunctional(name, made)


def all_of(*preconditions: FunctionalPrecondition) -> NamedFunctional:
    """AND of several functional preconditions, evaluated in order with short-circuit."""
    label = " and ".join(getattr(p, "label", getattr(p, "__name__", "fn")) for p in preconditions)
    return NamedFunctional(label, lambda context: all(p(context) for p in preconditions))


def _count(name: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ConfigurationError(f"{name} must be a non-negative integer, not {value!r}")
    return value


@register_functional("min_messages")
def min_messages(n: int) -> NamedFunctional:
    """Every targeted agent has sent at least ``n`` messages."""
    count = _count("min_messages", n)
    return NamedFunctional(
        f"min_messages({count})",
        lambda context: all(context.action_count(a) >= count for a in context.agent_ids),
    )


@register_functional("max_messages")
def max_messages(n: int) -> NamedFunctional:
    """Every targeted agent has sent at most ``n`` messages (an intervention for the opening of a run)."""
    count = _count("max_messages", n)
    return NamedFunctional(
        f"max_messages({count})",
        lambda context: all(context.action_count(a) <= count for a in context.agent_ids),
    )


@register_functional("channel_min_messages")
def channel_min_messages(n: int) -> NamedFunctional:
    """The channel trajectory holds at least ``n`` messages from anyone."""
    count = _count("channel_min_messages", n)
    return NamedFunctional(f"channel_min_messages({count})", lambda context: context.channel_action_count() >= count)


@register_functional("every_n_steps")
def every_n_steps(n: int) -> NamedFunctional:
    """True on steps 0, n, 2n, … (throttles an expensive intervention)."""
    period = _count("every_n_steps", n)
    if period == 0:
        raise ConfigurationError("every_n_steps must be at least 1")
    return NamedFunctional(f"every_n_steps({period})", lambda context: context.step % period == 0)
