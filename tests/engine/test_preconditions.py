"""Named preconditions: the registry and the three built-in ones."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import pytest

from engine import preconditions
from engine.models import Event, EventKind
from engine.preconditions import get_precondition, precondition_names, register_precondition

EventFactory = Callable[..., Event]


@pytest.fixture
def make_event() -> EventFactory:
    """make_event(text, kind=ACTION): an event of Pam's trajectory."""

    def make(text: str = "Hi Jim", kind: EventKind = EventKind.ACTION) -> Event:
        source = "Jim" if kind is EventKind.STIMULUS else None
        return Event("pam", "Pam Beesly", text, kind=kind, source=source)

    return make


@pytest.fixture
def registry(monkeypatch: pytest.MonkeyPatch) -> None:
    """A private copy of the registry, so registrations made by a test vanish after it."""
    monkeypatch.setattr(preconditions, "_REGISTRY", dict(preconditions._REGISTRY))


def test_the_built_ins_are_registered() -> None:
    names = precondition_names()
    assert {"has_prior_actions", "is_direct_message", "in_channel"} <= set(names)
    assert list(names) == sorted(names)


def test_an_unknown_name_has_no_precondition() -> None:
    assert get_precondition("no_such_precondition") is None


def test_has_prior_actions(make_event: EventFactory) -> None:
    check = get_precondition("has_prior_actions")
    assert check is not None
    assert not check([], {}, {})
    assert not check([make_event("Hello", EventKind.STIMULUS)], {}, {})
    assert check([make_event("Hello", EventKind.STIMULUS), make_event("Hi back")], {}, {})


@pytest.mark.parametrize(
    ("variables", "direct", "channel"),
    [
        ({}, False, False),
        ({"recipient_name": "Jim"}, True, False),
        ({"channel_name": "general"}, False, True),
        ({"channel_name": "general", "recipient_name": "Jim"}, True, False),
        ({"channel_name": "", "recipient_name": ""}, False, False),
    ],
)
def test_direct_message_and_channel_are_exclusive(variables: dict[str, str], direct: bool, channel: bool) -> None:
    is_direct, in_channel = get_precondition("is_direct_message"), get_precondition("in_channel")
    assert is_direct is not None and in_channel is not None
    assert (is_direct([], {}, variables), in_channel([], {}, variables)) == (direct, channel)
    assert not (direct and channel)


@pytest.mark.usefixtures("registry")
def test_registering_makes_a_function_available_by_name(make_event: EventFactory) -> None:
    @register_precondition("test_long_history")
    def long_history(events: Sequence[Event], context: Mapping[str, str], variables: Mapping[str, str]) -> bool:
        return len(events) >= int(context.get("min", "3"))

    assert get_precondition("test_long_history") is long_history  # the decorator returns the function itself
    assert "test_long_history" in precondition_names()
    assert long_history([make_event()] * 3, {}, {})
    assert not long_history([make_event()] * 3, {"min": "4"}, {})


def test_registrations_of_other_tests_do_not_leak() -> None:
    assert get_precondition("test_long_history") is None
