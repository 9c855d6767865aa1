"""Which text model answers: scripted rules files, score providers, and the missing-factory error."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.errors import PropositionFileError
from engine.formats.plexus.providers import model_spec
from engine.formats.plexus.textmodels import node_context
from engine.llm.base import CompletionRequest
from engine.llm.scripted import scripted_rules_model
from tests.engine.formats.plexus.helpers import scorecard


async def test_a_rules_file_answers_by_pattern_with_its_name_as_label(tmp_path: Path) -> None:
    path = tmp_path / "r.yaml"
    path.write_text('rules:\n  - {pattern: "hello", replies: [first, second]}\ndefault: other\n')
    model = scripted_rules_model(path)
    answers = [(await model.complete(CompletionRequest.single(t))).text for t in ("hello", "Hello!", "bye")]
    assert (model.name, answers) == ("scripted:r.yaml", ["first", "second", "other"])


def test_a_rule_needs_exactly_one_kind_of_reply(tmp_path: Path) -> None:
    path = tmp_path / "r.yaml"
    path.write_text("rules:\n  - pattern: x\n    reply: a\n    replies: [b]\n")
    with pytest.raises(PropositionFileError, match=r"r.yaml:2: rules.0: give exactly one of 'reply' and 'replies'"):
        scripted_rules_model(path)


@pytest.mark.parametrize(
    ("provider", "name", "spec"),
    [
        ("ChatOpenAI", "gpt-4o-mini", "openai-compatible:gpt-4o-mini"),
        ("AzureChatOpenAI", None, "openai-compatible"),
        ("ChatAnthropic", "claude-sonnet-4-5", "anthropic:claude-sonnet-4-5"),
        (None, "gpt-4o", "openai-compatible:gpt-4o"),
    ],
)
def test_score_model_settings_map_to_text_model_specs(provider: str | None, name: str | None, spec: str) -> None:
    assert model_spec(provider, name) == spec


def test_one_model_option_answers_every_score(tmp_path: Path) -> None:
    path = tmp_path / "r.yaml"
    path.write_text("default: Yes\n")
    card = scorecard("name: C\nscores:\n  - {name: A, graph: [{name: a, class: YesOrNoClassifier}]}\n")
    ctx = node_context(card, f"scripted:{path.name}", None, cwd=tmp_path)
    assert ctx.label == "scripted:r.yaml" and ctx.for_score("A").model is ctx.model
