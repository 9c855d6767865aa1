"""Functional preconditions: the named factories and their parameter validation."""

from __future__ import annotations

from dataclasses import replace

import pytest

from engine.errors import ConfigurationError
from engine.interventions import (
    StepContext,
    all_of,
    channel_min_messages,
    every_n_steps,
    functional,
    functional_names,
    make_functional,
    max_messages,
    min_messages,
    register_functional,
)
from engine.interventions.functional import NamedFunctional
from engine.models import EventKind

from .conftest import MakeContext, MakeEvents


def test_min_messages_counts_each_targets_own_messages(make_context: MakeContext) -> None:
    context = make_context(("michael", "jim"), messages={"michael": 7, "jim": 3, "dwight": 20})

    assert min_messages(7)(context.narrow(["michael"]))
    assert not min_messages(8)(context.narrow(["michael"]))
    assert not min_messages(4)(context)  # jim has only 3: every target must reach it
    assert max_messages(3)(context.narrow(["jim"])) and not max_messages(2)(context.narrow(["jim"]))


def test_stimuli_and_others_messages_are_not_counted(make_context: MakeContext, make_events: MakeEvents) -> None:
    base = make_context(("michael",), messages={"michael": 2})
    heard = make_events("michael", ["jim asks", "pam asks", "dwight asks"], kind=EventKind.STIMULUS)
    foreign = make_events("jim", ["jim's own message"])
    context = replace(base, histories={"michael": [*base.history("michael"), *heard, *foreign]})

    assert context.action_count("michael") == 2
    assert min_messages(2)(context) and not min_messages(3)(context)


def test_channel_and_step_preconditions(make_context: MakeContext) -> None:
    context = make_context(("jim",), messages={"michael": 4, "dwight": 4}, step=6)

    assert channel_min_messages(8)(context) and not channel_min_messages(9)(context)
    assert every_n_steps(3)(context) and not every_n_steps(4)(context)


def test_make_functional_accepts_a_value_or_keywords() -> None:
    assert make_functional("min_messages", 7).label == "min_messages(7)"
    assert make_functional("min_messages", {"n": 2}).label == "min_messages(2)"
    assert {"min_messages", "channel_min_messages", "every_n_steps"} <= set(functional_names())


@pytest.mark.parametrize(
    ("name", "params", "match"),
    [
        ("min_mesages", 3, "unknown functional precondition"),
        ("min_messages", -1, "non-negative integer"),
        ("min_messages", "seven", "non-negative integer"),
        ("min_messages", {"count": 3}, "bad parameters"),
        ("every_n_steps", 0, "at least 1"),
    ],
)
def test_bad_names_and_parameters_are_configuration_errors(name: str, params: object, match: str) -> None:
    with pytest.raises(ConfigurationError, match=match):
        make_functional(name, params)


def test_all_of_stops_at_the_first_false(make_context: MakeContext) -> None:
    seen: list[str] = []

    def spy(label: str, value: bool) -> NamedFunctional:
        def check(_context: StepContext) -> bool:
            seen.append(label)
            return value

        return NamedFunctional(label, check)

    combined = all_of(spy("a", True), spy("b", False), spy("c", True))

    assert not combined(make_context())
    assert seen == ["a", "b"] and combined.label == "a and b and c"


def test_registered_factory_is_available_by_name(make_context: MakeContext, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(functional, "_FACTORIES", dict(functional._FACTORIES))

    @register_functional("test_on_step")
    def on_step(n: int) -> NamedFunctional:
        return NamedFunctional(f"on_step({n})", lambda context: context.step == n)

    assert make_functional("test_on_step", 3)(make_context(step=3))
    assert not make_functional("test_on_step", 4)(make_context(step=3))
    assert "test_on_step" in functional_names()
