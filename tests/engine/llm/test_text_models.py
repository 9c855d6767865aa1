"""The provider text models through the real SDK / HTTP path against the local fakes: replies, usage,
retries under the judges' call policy, refusals, deadlines, secrets."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from engine.errors import JudgeError, JudgeTimeout
from engine.judges.llm import CallPolicy
from engine.llm.anthropic import AnthropicTextModel
from engine.llm.base import ChatMessage, CompletionRequest
from engine.llm.openai_compat import OpenAICompatibleTextModel
from engine.llm.policed import PolicedTextModel
from ops.fakes.chat_completions import ChatCompletionsServer
from ops.fakes.messages_api import MessagesApiServer
from ops.fakes.server import Behaviour, FakeLlmServer

KEY = "sk-PLANTED-text-model-key"
POLICY = CallPolicy(deadline_s=3.0, backoff_base_s=0.01, backoff_max_s=0.03)
Pair = tuple[FakeLlmServer, Callable[..., PolicedTextModel]]


@pytest.fixture(params=["anthropic", "openai-compatible"])
async def pair(request: pytest.FixtureRequest) -> AsyncIterator[Pair]:
    models: list[PolicedTextModel] = []
    if request.param == "anthropic":
        server: FakeLlmServer = MessagesApiServer()

        def make(policy: CallPolicy = POLICY) -> PolicedTextModel:
            model = AnthropicTextModel(api_key=KEY, model="claude-x", base_url=server.root_url, policy=policy)
            models.append(model)
            return model
    else:
        server = ChatCompletionsServer()

        def make(policy: CallPolicy = POLICY) -> PolicedTextModel:
            model = OpenAICompatibleTextModel(base_url=f"{server.root_url}/v1", model="local-x", api_key=KEY,
                                              policy=policy)  # fmt: skip
            models.append(model)
            return model

    async with server:
        yield server, make
        for model in models:
            await model.aclose()


REQUEST = CompletionRequest(
    (ChatMessage("user", "Say hello."), ChatMessage("assistant", "Hi."), ChatMessage("user", "Again, louder.")),
    system="You are Ana, a baker.",
    temperature=0.7,
    max_tokens=77,
    purpose="actor",
)


def _body_text(body: dict[str, Any]) -> str:
    return str(body)


async def test_reply_usage_and_the_request_sent(pair: Pair) -> None:
    server, make = pair
    server.enqueue(Behaviour.answer("HELLO THERE"))
    model = make()
    completion = await model.complete(REQUEST)
    assert completion.text == "HELLO THERE" and completion.model == model.name
    assert model.name in {"anthropic:claude-x", "openai-compatible:local-x"}
    assert completion.usage.output_tokens > 0 and completion.usage.input_tokens > 0
    (received,) = server.requests
    body = received.body
    assert body["max_tokens"] == 77 and body["temperature"] == 0.7
    text = _body_text(body)
    assert "You are Ana, a baker." in text and "Again, louder." in text
    assert model.calls == 1 and model.usage == completion.usage


async def test_transient_faults_are_retried_then_answered(pair: Pair) -> None:
    server, make = pair
    server.enqueue(Behaviour.rate_limited(0.01), Behaviour.server_error(503), Behaviour.overloaded(),
                   Behaviour.answer("finally"))  # fmt: skip
    model = make()
    assert (await model.complete(REQUEST)).text == "finally"
    assert len(server.requests) == 4 and model.calls == 1


async def test_gives_up_after_max_attempts(pair: Pair) -> None:
    server, make = pair
    server.default = Behaviour.server_error(500)
    model = make(CallPolicy(deadline_s=3.0, max_attempts=3, backoff_base_s=0.01, backoff_max_s=0.02))
    with pytest.raises(JudgeError, match="gave up after 3 attempts"):
        await model.complete(REQUEST)
    assert len(server.requests) == 3 and model.calls == 0


async def test_a_refusal_is_not_retried(pair: Pair) -> None:
    server, make = pair
    server.enqueue(Behaviour(status=400, error_type="invalid_request_error"))
    with pytest.raises(JudgeError, match="400") as caught:
        await make().complete(REQUEST)
    assert len(server.requests) == 1 and KEY not in str(caught.value)


async def test_the_deadline_covers_every_retry(pair: Pair) -> None:
    server, make = pair
    server.default = Behaviour.slow(2.0)
    model = make(CallPolicy(deadline_s=0.3, backoff_base_s=0.01))
    with pytest.raises(JudgeTimeout, match=r"0\.3 s"):
        await model.complete(REQUEST)
    assert KEY not in repr(model)


async def test_make_text_model_specs(tmp_path: Path) -> None:
    from engine.errors import ConfigurationError, PropositionFileError
    from engine.llm.factory import make_text_model
    from engine.llm.scripted import ScriptedTextModel
    from engine.settings import Settings

    rules = tmp_path / "rules.yaml"
    rules.write_text("default: nope\nrules:\n  - pattern: 'hello (\\w+)'\n    reply: 'hi {0}'\n", encoding="utf-8")
    model = make_text_model("scripted:" + str(rules), Settings())
    assert model.name == "scripted:rules.yaml"
    assert (await model.complete(CompletionRequest.single("hello Ana"))).text == "hi Ana"
    assert (await model.complete(CompletionRequest.single("bye"))).text == "nope"
    assert make_text_model("", Settings(), scripted=ScriptedTextModel).name.startswith("scripted:")
    with pytest.raises(ConfigurationError, match="no built-in scripted model"):
        make_text_model("scripted", Settings())
    rules.write_text("rules:\n  - reply: x\n", encoding="utf-8")
    with pytest.raises(PropositionFileError, match=r"rules.yaml:2: rules.0.pattern: required key is missing"):
        make_text_model("scripted:" + str(rules), Settings())
    assert make_text_model("anthropic", Settings(anthropic_api_key="k")).name == "anthropic:claude-haiku-4-5"


def test_a_scripted_actor_never_imports_the_anthropic_sdk(tmp_path: Path) -> None:
    """The SDK costs seconds of imports: `drift demo`, `simulate` and `experiment run` with a scripted actor (or a
    bad option they refuse) must not pay them."""
    rules = tmp_path / "rules.yaml"
    rules.write_text("default: ok\n", encoding="utf-8")
    code = (
        "import sys\nfrom engine.actors.factory import make_actor\nfrom engine.llm.factory import make_text_model\n"
        f"from engine.settings import Settings\nmake_text_model({f'scripted:{rules}'!r}, Settings())\n"
        "print('anthropic' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60)
    assert done.stdout.strip() == "False"
