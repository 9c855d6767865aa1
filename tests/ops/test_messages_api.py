"""The Messages-API test double, spoken to over plain HTTP (the SDK path is covered by the judge tests)."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from engine.judges.base import JudgeMode
from engine.models import Persona
from engine.prompts import build_prompt
from ops.fakes.judge_requests import make_persona, make_request
from ops.fakes.messages_api import MessagesApiServer
from ops.fakes.server import Behaviour, ReceivedRequest

REPO = Path(__file__).resolve().parents[2]


def body_for(
    count: int, mode: JudgeMode = JudgeMode.SCORE, action: str = "draft", persona: Persona | None = None
) -> dict[str, Any]:
    prompt = build_prompt(make_request(mode, claims=count, action=action, persona=persona))
    return {
        "model": "m",
        "max_tokens": 100,
        "system": [{"type": "text", "text": prompt.system, "cache_control": {"type": "ephemeral"}}],
        "messages": [
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": prompt.about, "cache_control": {"type": "ephemeral"}},
                    {"type": "text", "text": prompt.conversation() + prompt.draft},
                    {"type": "text", "text": prompt.new},
                ],
            }
        ],
    }


@pytest.fixture
async def server() -> AsyncIterator[MessagesApiServer]:
    async with MessagesApiServer() as fake:
        yield fake


async def post(server: MessagesApiServer, body: dict[str, Any]) -> httpx.Response:
    async with httpx.AsyncClient() as client:
        return await client.post(f"{server.base_url}/v1/messages", json=body)


async def test_default_answers_every_claim_of_a_batch(server: MessagesApiServer) -> None:
    response = await post(server, body_for(4))
    data = response.json()
    assert response.status_code == 200
    assert data["type"] == "message" and data["role"] == "assistant" and data["stop_reason"] == "end_turn"
    answer = json.loads(data["content"][0]["text"])
    assert [r["id"] for r in answer["results"]] == ["claim-0", "claim-1", "claim-2", "claim-3"]
    assert all(r["value"] == 7 for r in answer["results"])
    assert server.requests[0].body["model"] == "m"


async def test_individual_check_and_enumerate_answers(server: MessagesApiServer) -> None:
    check = json.loads((await post(server, body_for(1, JudgeMode.CHECK))).json()["content"][0]["text"])
    assert check["value"] is True and "id" not in check
    ideas = json.loads((await post(server, body_for(1, JudgeMode.ENUMERATE))).json()["content"][0]["text"])
    assert ideas["value"] == len(ideas["items"]) == 2


async def test_cache_is_created_once_then_read(server: MessagesApiServer) -> None:
    persona = make_persona().model_copy(update={"background": "A long life in paper sales. " * 60})
    first = (await post(server, body_for(2, action="one", persona=persona))).json()["usage"]
    second = (await post(server, body_for(2, action="two, longer", persona=persona))).json()["usage"]
    assert first["cache_creation_input_tokens"] > 0 and first["cache_read_input_tokens"] == 0
    assert second["cache_read_input_tokens"] == first["cache_creation_input_tokens"]
    assert second["cache_creation_input_tokens"] == 0
    assert second["input_tokens"] > first["input_tokens"]


async def test_scripted_errors(server: MessagesApiServer) -> None:
    server.enqueue(Behaviour.rate_limited(retry_after=2), Behaviour.overloaded(), Behaviour.server_error())
    limited = await post(server, body_for(1))
    assert limited.status_code == 429 and limited.headers["retry-after"] == "2"
    assert limited.json()["error"]["type"] == "rate_limit_error"
    overloaded = await post(server, body_for(1))
    assert overloaded.status_code == 529 and overloaded.json()["error"]["type"] == "overloaded_error"
    assert (await post(server, body_for(1))).status_code == 500
    assert (await post(server, body_for(1))).status_code == 200  # queue drained: default again


async def test_callable_behaviours_see_the_request() -> None:
    seen: list[ReceivedRequest] = []

    def script(received: ReceivedRequest) -> Behaviour:
        seen.append(received)
        return Behaviour.answer("fixed text")

    async with MessagesApiServer(script) as fake:
        data = (await post(fake, body_for(1))).json()
    assert data["content"][0]["text"] == "fixed text"
    assert len(seen) == 1 and seen[0].path == "/v1/messages"


async def test_delay(server: MessagesApiServer) -> None:
    server.enqueue(Behaviour.slow(0.2))
    started = time.perf_counter()
    await post(server, body_for(1))
    assert time.perf_counter() - started >= 0.19


def test_runs_as_a_standalone_process() -> None:
    process = subprocess.Popen(
        [sys.executable, "-m", "ops.fakes.messages_api", "--port", "0", "--delay-ms", "50", "--score", "3"],
        cwd=REPO,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        assert "listening on http://127.0.0.1:" in line
        base_url = line.split("listening on ")[1].split()[0]
        started = time.perf_counter()
        response = httpx.post(f"{base_url}/v1/messages", json=body_for(1), timeout=5)
        assert time.perf_counter() - started >= 0.05
        assert json.loads(response.json()["content"][0]["text"])["value"] == 3
    finally:
        process.terminate()
        process.wait(timeout=5)
