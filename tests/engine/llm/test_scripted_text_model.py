from __future__ import annotations

import re
from pathlib import Path

import pytest

from engine.errors import ConfigurationError, PropositionFileError
from engine.formats.plexus.textmodels import text_model
from engine.llm.base import ChatMessage, CompletionRequest
from engine.llm.factory import make_text_model
from engine.llm.scripted import ScriptedRule, ScriptedTextModel, scripted_rules_model
from engine.settings import Settings


async def test_first_matching_rule_answers_with_groups_and_sequences() -> None:
    model = ScriptedTextModel.from_pairs(
        [(r"classify: (\w+)", "Class {0}"), ("retry", ["wrong", "right"])], default="nothing"
    )
    assert (await model.complete(CompletionRequest.single("classify: beets"))).text == "Class beets"
    assert [(await model.complete(CompletionRequest.single("retry"))).text for _ in range(3)] == [
        "wrong",
        "right",
        "right",
    ]
    assert (await model.complete(CompletionRequest.single("?"))).text == "nothing"
    assert model.name.startswith("scripted:")
    assert len(model.requests) == 5


async def test_rules_see_the_system_text_and_every_turn() -> None:
    model = ScriptedTextModel.from_pairs([("you are dwight", "Bears.")])
    request = CompletionRequest((ChatMessage("user", "hi"),), system="You are Dwight")
    completion = await model.complete(request)
    assert completion.text == "Bears."
    assert completion.usage.input_tokens > 0


def test_a_bad_pattern_is_a_configuration_error() -> None:
    with pytest.raises(ConfigurationError, match="bad regular expression"):
        ScriptedRule("(", ("x",))


async def test_a_rules_file_reads_replies_as_the_text_written(tmp_path: Path) -> None:
    path = tmp_path / "rules.yaml"
    path.write_text("rules:\n  - {pattern: 'ready\\?', reply: yes}\n  - {pattern: count, replies: [1, 2]}\n")
    model = scripted_rules_model(path)
    answers = [(await model.complete(CompletionRequest.single(t))).text for t in ("ready?", "count", "count", "?")]
    assert (model.name, answers) == ("scripted:rules.yaml", ["Yes", "1", "2", ""])


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("rules:\n  - pattern: '('\n    reply: x\n", "rules.yaml:2: rules.0.pattern: not a regular expression"),
        ("rules:\n  - pattern: a\n    reply: x\n    note: y\n", "rules.yaml:4: rules.0.note: unknown key 'note'"),
        ("default: x\ndefualt: y\n", "rules.yaml:2: defualt: unknown key 'defualt'; did you mean 'default'"),
        ("rules:\n  - pattern: a\n", "rules.yaml:2: rules.0: give exactly one of 'reply' and 'replies'"),
        ("- pattern: a\n", "rules.yaml:1: the top level must be a mapping"),
        ("", "rules.yaml:1: the rules file is empty"),
    ],
)
def test_every_scripted_rules_spec_reads_the_file_with_one_strict_loader(
    tmp_path: Path, text: str, problem: str
) -> None:
    """``--actor scripted:FILE`` (the text-model factory) and Plexus's ``--model scripted:FILE`` refuse a bad
    rules file alike, each problem as ``FILE:LINE: field.path: message``."""
    path = tmp_path / "rules.yaml"
    path.write_text(text)
    with pytest.raises(PropositionFileError, match=re.escape(problem)):
        make_text_model(f"scripted:{path}", Settings())
    with pytest.raises(PropositionFileError, match=re.escape(problem)):
        text_model("scripted:rules.yaml", None, cwd=tmp_path)


def test_a_missing_rules_file_is_named(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match=r"no such rules file: .*absent\.yaml"):
        make_text_model(f"scripted:{tmp_path / 'absent.yaml'}", Settings())
