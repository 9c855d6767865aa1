"""Templates render only in Jinja2's sandbox, with strict undefined variables."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.formats.metareason.loader import check_family
from engine.formats.metareason.rendering import TemplateProblem, compile_template, render, variables


def test_variables_with_and_without_spaces_filters_and_blocks() -> None:
    assert variables("{{a}} {{ b }} {{ c|upper }} {% if d %}{{ e.f }}{% endif %}") == {"a", "b", "c", "d", "e"}


def test_renders_plain_text_and_keeps_the_trailing_newline() -> None:
    assert render(compile_template("Hi {{ who }} <b>&\n"), {"who": "Dwight"}) == "Hi Dwight <b>&\n"


@pytest.mark.parametrize(
    "source",
    [
        "{{ who.__class__.__mro__ }}",
        "{{ who.__class__.__base__.__subclasses__() }}",
        "{{ render.__globals__ }}",
        "{{ ''.__class__ }}",
        "{{ who.format.__self__ }}",
    ],
)
def test_attribute_access_to_internals_is_blocked(source: str) -> None:
    with pytest.raises(TemplateProblem, match="template cannot be rendered"):
        render(compile_template(source), {"who": "x", "render": render})


def test_an_undefined_variable_fails_instead_of_rendering_empty() -> None:
    with pytest.raises(TemplateProblem, match="UndefinedError: 'missing' is undefined"):
        render(compile_template("{{ missing }}"), {})


def test_a_family_whose_template_reaches_internals_is_rejected(tmp_path: Path) -> None:
    path = tmp_path / "evil.yaml"
    path.write_text(
        'prompt_id: evil\nprompt_template: "{{ tone.__class__.__mro__ }}"\nschema:\n  tone:\n    type: categorical\n'
        "    values: [a]\nn_variants: 100\noracles:\n  j:\n    type: llm_judge\n    rubric: r\n"
    )
    errors = [str(e) for e in check_family(path, set()).errors]
    assert len(errors) == 1 and errors[0].startswith(f"{path}:2: prompt_template: template cannot be rendered: ")
    assert "SecurityError" in errors[0] or "UndefinedError" in errors[0]
