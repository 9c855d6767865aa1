"""``.agentv/targets.yaml`` cli targets: placeholders, the output file, refusal of other providers."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

import pytest

from engine.errors import ConfigurationError
from engine.formats.agentv.targets import load_named_target, parse_output, render
from engine.formats.targets import TargetError, TargetRequest, ToolCall

AGENT = """
import json, sys
args = sys.argv[1:]
prompt, prompt_file, eval_id, out = args
with open(prompt_file) as f:
    from_file = f.read()
with open(out, "w") as f:
    json.dump({"output": [
        {"role": "assistant", "content": "thinking", "tool_calls": [{"tool": "search", "input": {"q": prompt}}]},
        {"role": "assistant", "content": f"{eval_id}|{prompt}|{from_file}",
         "tool_calls": [{"tool": "answer", "input": {}, "output": "ok"}]},
    ], "token_usage": {"input": 5, "output": 7}, "duration_ms": 12}, f)
"""


def test_placeholders_are_filled_shell_quoted() -> None:
    values = {"PROMPT": shlex.quote("it's $HOME"), "EVAL_ID": "c1"}
    assert render("agent --p {PROMPT} --id {EVAL_ID} {OTHER}", values) == "agent --p 'it'\"'\"'s $HOME' --id c1 {OTHER}"


def setup_targets(tmp_path: Path, body: str) -> Path:
    (tmp_path / ".agentv").mkdir()
    (tmp_path / ".agentv" / "targets.yaml").write_text(body)
    evals = tmp_path / "evals"
    evals.mkdir()
    return evals


async def test_a_cli_target_answers_through_its_output_file(tmp_path: Path) -> None:
    (tmp_path / "agent.py").write_text(AGENT)
    command = f"{sys.executable} agent.py {{PROMPT}} {{PROMPT_FILE}} {{EVAL_ID}} {{OUTPUT_FILE}}"
    evals = setup_targets(tmp_path, f'targets:\n  - name: mock\n    provider: cli\n    command: "{command}"\n')
    target = load_named_target("mock", evals)
    assert target.name == "cli:mock"
    answer = await target.answer(TargetRequest("case-1", "What's up?"))
    assert answer.text == "case-1|What's up?|What's up?"
    assert answer.tool_calls == (ToolCall("search", {"q": "What's up?"}), ToolCall("answer", {}, "ok"))
    assert (answer.usage.input_tokens, answer.usage.output_tokens, answer.latency_ms) == (5, 7, 12.0)


async def test_a_cli_target_that_writes_no_output_file_is_a_target_error(tmp_path: Path) -> None:
    evals = setup_targets(tmp_path, "targets:\n  - {name: quiet, provider: cli, command: 'true {PROMPT}'}\n")
    with pytest.raises(TargetError, match="wrote no"):
        await load_named_target("quiet", evals).answer(TargetRequest("c", "q"))


def test_other_providers_and_unknown_names_are_refused(tmp_path: Path) -> None:
    evals = setup_targets(
        tmp_path,
        "targets:\n  - {name: azure, provider: azure, endpoint: x}\n"
        "  - {name: odd, provider: cli, command: 'a {NOPE}'}\n",
    )
    with pytest.raises(ConfigurationError, match="provider 'azure' is not supported by drift"):
        load_named_target("azure", evals)
    with pytest.raises(ConfigurationError, match="unknown placeholder"):
        load_named_target("odd", evals)
    with pytest.raises(ConfigurationError, match="no target named 'ghost'"):
        load_named_target("ghost", evals)


def test_output_files_of_every_shape() -> None:
    assert parse_output("plain words", "c", "t", 3.0).text == "plain words"
    assert parse_output('{"text": "hi"}', "c", "t", 3.0).text == "hi"
    assert parse_output('{"output_messages": [{"role": "assistant", "content": "m"}]}', "c", "t", 1).text == "m"


async def test_a_text_model_target_sends_the_conversation_and_labels_the_model() -> None:
    from engine.formats.targets import TextModelTarget
    from engine.llm.scripted import ScriptedTextModel

    model = ScriptedTextModel.from_pairs([("weekend", "Beets. Always beets.")], default="?")
    target = TextModelTarget(model)
    messages = ({"role": "system", "content": "You are Dwight."}, {"role": "user", "content": "Fun weekend?"})
    answer = await target.answer(TargetRequest("c1", "Fun weekend?", messages))
    assert (answer.text, answer.target) == ("Beets. Always beets.", f"llm:{model.name}")
    sent = model.requests[0]
    assert sent.system == "You are Dwight."
    assert [(m.role, m.content) for m in sent.messages] == [("user", "Fun weekend?")]
