"""Targets: recorded answers, commands, actors and the answer cache."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import orjson
import pytest

from engine.actors.base import ActRequest, ActResult
from engine.errors import ConfigurationError
from engine.formats.targets import (
    CachedTarget,
    CommandTarget,
    RecordedTarget,
    TargetAnswer,
    TargetError,
    TargetRequest,
    ToolCall,
    parse_target,
)
from engine.models import Persona


def _recordings(tmp_path: Path, *records: dict[str, object]) -> Path:
    path = tmp_path / "answers.jsonl"
    path.write_bytes(b"\n".join(orjson.dumps(r) for r in records) + b"\n")
    return path


async def test_recorded_answers_with_tool_calls(tmp_path: Path) -> None:
    _recordings(
        tmp_path,
        {"id": "a", "answer": "Beets.", "tool_calls": [{"tool": "schedule_meeting", "input": {"when": "9"}}]},
        {"id": "b", "answer": "Bears."},
    )
    target = parse_target("recorded:answers.jsonl", cwd=tmp_path)
    answer = await target.answer(TargetRequest("a", "prompt"))
    assert answer.text == "Beets."
    assert answer.tool_calls == (ToolCall("schedule_meeting", {"when": "9"}),)
    assert target.name == "recorded:answers.jsonl"


async def test_a_missing_recording_names_the_id(tmp_path: Path) -> None:
    target = RecordedTarget(_recordings(tmp_path, {"id": "a", "answer": "x"}))
    with pytest.raises(TargetError, match="'zzz'"):
        await target.answer(TargetRequest("zzz", "prompt"))


def test_a_bad_recordings_file_is_a_located_error(tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text('{"id": "a", "answer": "x"}\nnot json\n')
    with pytest.raises(ConfigurationError, match=r"bad\.jsonl:2: not JSON"):
        RecordedTarget(path)


async def test_a_command_reads_the_item_and_answers_plain_or_json(tmp_path: Path) -> None:
    script = tmp_path / "agent.py"
    script.write_text(
        "import json, sys\nitem = json.load(sys.stdin)\n"
        "if item['id'] == 'tool':\n"
        "    print(json.dumps({'answer': 'done', 'tool_calls': [{'tool': 'search'}]}))\n"
        "else:\n    print('You said: ' + item['prompt'])\n"
    )
    target = CommandTarget(f"{sys.executable} agent.py", cwd=tmp_path)
    plain = await target.answer(TargetRequest("p", "hello"))
    tool = await target.answer(TargetRequest("tool", "x"))
    assert plain.text == "You said: hello"
    assert (tool.text, tool.tool_calls) == ("done", (ToolCall("search"),))


async def test_a_failing_command_is_a_target_error(tmp_path: Path) -> None:
    target = CommandTarget(f"{sys.executable} -c 'import sys; sys.exit(3)'", cwd=tmp_path)
    with pytest.raises(TargetError, match="exit code 3"):
        await target.answer(TargetRequest("x", "y"))


class _EchoActor:
    name = "echo-actor"

    def __init__(self) -> None:
        self.requests: list[ActRequest] = []

    async def act(self, request: ActRequest) -> ActResult:
        self.requests.append(request)
        return ActResult(f"{request.persona.name if request.persona else '?'}: {request.stimulus}", self.name)


async def test_an_actor_target_answers_in_persona() -> None:
    actor = _EchoActor()
    dwight = Persona(id="dwight", name="Dwight Schrute")
    target = parse_target("actor:dwight", cwd=Path(), resolve_actor=lambda agent: (actor, dwight))
    answer = await target.answer(TargetRequest("1", "Who is the best salesman?"))
    assert answer.text == "Dwight Schrute: Who is the best salesman?"
    assert actor.requests[0].agent_id == "dwight"


async def test_the_cache_answers_the_same_prompt_once() -> None:
    actor = _EchoActor()
    cached = CachedTarget(parse_target("actor:jim", cwd=Path(), resolve_actor=lambda a: (actor, None)))
    first = await cached.answer(TargetRequest("1", "same"))
    second = await cached.answer(TargetRequest("1", "same"))
    other = await cached.answer(TargetRequest("1", "different"))
    assert (first.cached, second.cached, other.cached) == (False, True, False)
    assert second.text == first.text
    assert cached.calls == len(actor.requests) == 2


@pytest.mark.parametrize("spec", ["", "recorded", "command:", "http://x", "nosuch:thing"])
def test_bad_specs_are_one_line_errors(spec: str) -> None:
    with pytest.raises(ConfigurationError) as caught:
        parse_target(spec, cwd=Path())
    assert "\n" not in str(caught.value)


def test_actor_targets_need_an_actor() -> None:
    with pytest.raises(ConfigurationError, match="no actor"):
        parse_target("actor:dwight", cwd=Path())


class _Slow:
    """Counts calls; each call waits until released, so identical requests overlap."""

    def __init__(self, fail: bool = False) -> None:
        self.calls = 0
        self.release = asyncio.Event()
        self.fail = fail

    @property
    def name(self) -> str:
        return "slow"

    async def answer(self, request: TargetRequest) -> TargetAnswer:
        self.calls += 1
        await self.release.wait()
        if self.fail:
            raise TargetError("down")
        return TargetAnswer(request.item_id, f"answer to {request.prompt}", self.name)


async def test_content_keyed_cache_ignores_the_item_id_and_coalesces_in_flight_requests() -> None:
    inner = _Slow()
    cached = CachedTarget(inner, by_content=True)
    first = asyncio.create_task(cached.answer(TargetRequest("a", "hi", payload={"params": {"x": 1}})))
    second = asyncio.create_task(cached.answer(TargetRequest("b", "hi", payload={"params": {"x": 1}})))
    other = asyncio.create_task(cached.answer(TargetRequest("c", "hi", payload={"params": {"x": 2}})))
    await asyncio.sleep(0)
    inner.release.set()
    answers = await asyncio.gather(first, second, other)
    assert inner.calls == 2  # the x=1 prompt once, the x=2 prompt once
    assert [(a.item_id, a.cached) for a in answers] == [("a", False), ("b", True), ("c", False)]
    assert answers[1].text == answers[0].text


async def test_a_failed_call_is_not_cached_and_its_waiters_see_the_error() -> None:
    inner = _Slow(fail=True)
    cached = CachedTarget(inner, by_content=True)
    first = asyncio.create_task(cached.answer(TargetRequest("a", "hi")))
    second = asyncio.create_task(cached.answer(TargetRequest("b", "hi")))
    await asyncio.sleep(0)
    inner.release.set()
    results = await asyncio.gather(first, second, return_exceptions=True)
    assert all(isinstance(r, TargetError) for r in results) and inner.calls == 1
    inner.fail = False
    assert (await cached.answer(TargetRequest("c", "hi"))).cached is False and inner.calls == 2


async def test_an_llm_target_answers_with_its_text_model() -> None:
    from engine.llm.scripted import ScriptedTextModel

    model = ScriptedTextModel.from_pairs([("beets", "Bears eat beets.")], default="?")
    target = parse_target("llm:whatever", cwd=Path(), resolve_model=lambda spec: model)
    answer = await target.answer(TargetRequest("1", "Tell me about beets."))
    assert (answer.text, answer.target) == ("Bears eat beets.", f"llm:{model.name}")
    with pytest.raises(ConfigurationError, match="no text model"):
        parse_target("llm:x", cwd=Path())
