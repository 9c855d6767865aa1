"""Claim templates: known variables filled once, everything else left exactly as written."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from engine.propositions import TEMPLATE_VARIABLES, placeholders, render_claim
from engine.propositions.templates import unknown_placeholders

FULL = {
    "agent_name": "Michael Scott",
    "action": "I declare bankruptcy!",
    "channel_name": "#general",
    "recipient_name": "Pam Beesly",
}


def test_every_known_variable_is_filled() -> None:
    claim = "{{agent_name}} said {{action}} in {{channel_name}} to {{recipient_name}}"
    assert render_claim(claim, FULL) == "Michael Scott said I declare bankruptcy! in #general to Pam Beesly"


def test_inner_spaces_are_tolerated() -> None:
    assert render_claim("{{ agent_name }} and {{agent_name  }}", FULL) == "Michael Scott and Michael Scott"


def test_unknown_variables_stay_as_written() -> None:
    claim = "{{ agent_nme }} talks to {{manager}} about {{agent_name}}"
    assert render_claim(claim, {**FULL, "manager": "Jan"}) == "{{ agent_nme }} talks to {{manager}} about Michael Scott"


def test_missing_or_empty_values_stay_as_written() -> None:
    claim = "{{agent_name}} wrote to {{ recipient_name }} in {{channel_name}}"
    rendered = render_claim(claim, {"agent_name": "Jim Halpert", "channel_name": ""})
    assert rendered == "Jim Halpert wrote to {{ recipient_name }} in {{channel_name}}"


def test_values_are_not_expanded_again() -> None:
    variables = {"agent_name": "{{action}}", "action": "{{agent_name}}"}
    assert render_claim("{{agent_name}} / {{action}}", variables) == "{{action}} / {{agent_name}}"


def test_values_with_regex_specials_are_inserted_verbatim() -> None:
    assert render_claim("{{action}}", {"action": r"\1 $0 \g<0>"}) == r"\1 $0 \g<0>"


def test_malformed_braces_are_left_alone() -> None:
    claim = "{agent_name} {{agent_name} {{ }} {{1abc}} {{{agent_name}}}"
    assert render_claim(claim, FULL) == "{agent_name} {{agent_name} {{ }} {{1abc}} {Michael Scott}"


def test_placeholders_lists_names_in_first_use_order() -> None:
    text = "{{action}} {{ agent_name }} {{action}} {{mystery}}"
    assert placeholders(text) == ("action", "agent_name", "mystery")
    assert unknown_placeholders(text) == ("mystery",)


@given(text=st.text(max_size=200), values=st.dictionaries(st.sampled_from(TEMPLATE_VARIABLES), st.text(max_size=20)))
def test_text_without_placeholders_is_unchanged(text: str, values: dict[str, str]) -> None:
    if not placeholders(text):
        assert render_claim(text, values) == text


@given(value=st.text(max_size=40))
def test_single_known_placeholder_becomes_its_value(value: str) -> None:
    rendered = render_claim("<{{agent_name}}>", {"agent_name": value})
    assert rendered == (f"<{value}>" if value else "<{{agent_name}}>")
