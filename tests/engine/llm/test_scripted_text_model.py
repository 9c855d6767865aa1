from __future__ import annotations

import pytest

from engine.errors import ConfigurationError
from engine.llm.base import ChatMessage, CompletionRequest
from engine.llm.scripted import ScriptedRule, ScriptedTextModel


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
