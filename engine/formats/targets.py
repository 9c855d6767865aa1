"""Targets: who answers an evaluation item (a MetaReason variant, an AgentV case).

One spec names a target in every format command (``--target``):

* ``actor:AGENT_ID`` — the persona agent, answering through the configured :class:`~engine.actors.base.Actor`;
* ``llm:MODEL`` — a plain LLM (``anthropic[:MODEL]``, ``openai-compatible[:MODEL]``, ``scripted:RULES.yaml``);
* ``command:CMD`` — a program: the item as JSON on stdin (``{"id", "prompt", "messages", …}``), the answer on
  stdout (plain text, or a JSON object ``{"answer": …, "tool_calls": […]}``); it runs with a timeout, in its
  own process group, without the ``DRIFT_*`` settings and API keys of this service;
* ``recorded:FILE.jsonl`` — recorded answers, one ``{"id", "answer", "tool_calls"?}`` per line, keyed by item
  id; an item with no recording is an error naming it.

:class:`CachedTarget` wraps any target so the same prompt sent to the same target is answered once.
"""

from __future__ import annotations

import asyncio
import hashlib
import shlex
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import orjson

from engine.actors.base import Actor, ActRequest
from engine.errors import ConfigurationError, DriftError
from engine.formats.sandbox import Limits, run_limited
from engine.llm.base import ChatMessage, CompletionRequest, TextModel
from engine.models import ZERO_USAGE, Persona, TokenUsage

TARGET_CHOICES = ("actor:AGENT_ID", "llm:MODEL", "command:CMD", "recorded:FILE.jsonl")


class TargetError(DriftError):
    """A target could not answer an item (the item is recorded as errored; the run goes on)."""


@dataclass(frozen=True, slots=True)
class ToolCall:
    tool: str
    input: Any = None
    output: Any = None


@dataclass(frozen=True, slots=True)
class TargetRequest:
    """One item to answer: its id, the rendered prompt, and optionally the conversation and extra fields."""

    item_id: str
    prompt: str
    messages: tuple[Mapping[str, Any], ...] = ()
    payload: Mapping[str, Any] = field(default_factory=dict)

    def as_json(self) -> bytes:
        body = {"id": self.item_id, "prompt": self.prompt, "messages": list(self.messages), **self.payload}
        return orjson.dumps(body, default=str)

    def cache_key(self, target: str) -> str:
        return hashlib.sha256(target.encode() + b"\0" + self.as_json()).hexdigest()

    def content_key(self, target: str) -> str:
        """Like :meth:`cache_key` without the item id: equal prompts, messages and payloads share it."""
        body = orjson.dumps({"prompt": self.prompt, "messages": list(self.messages), **self.payload}, default=str)
        return hashlib.sha256(target.encode() + b"\0" + body).hexdigest()


@dataclass(frozen=True, slots=True)
class TargetAnswer:
    item_id: str
    text: str
    target: str
    tool_calls: tuple[ToolCall, ...] = ()
    usage: TokenUsage = ZERO_USAGE
    latency_ms: float = 0.0
    cached: bool = False
    #: what the answer cost, when the target reports it (AgentV cli targets' ``cost_usd``)
    cost_usd: float | None = None


@runtime_checkable
class Target(Protocol):
    @property
    def name(self) -> str: ...

    async def answer(self, request: TargetRequest) -> TargetAnswer: ...


def parse_tool_calls(raw: Any, where: str) -> tuple[ToolCall, ...]:
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise TargetError(f"{where}: tool_calls must be a list")
    calls = []
    for index, item in enumerate(raw):
        if not isinstance(item, Mapping) or not isinstance(item.get("tool"), str):
            raise TargetError(f"{where}: tool_calls.{index} needs a string 'tool'")
        calls.append(ToolCall(item["tool"], item.get("input"), item.get("output")))
    return tuple(calls)


class RecordedTarget:
    """Answers from a JSONL file of recordings keyed by item id."""

    def __init__(self, path: Path) -> None:
        self._path = path
        self._answers: dict[str, tuple[str, tuple[ToolCall, ...]]] = {}
        try:
            lines = path.read_text(encoding="utf-8").splitlines()
        except OSError as exc:
            raise ConfigurationError(f"{path}: cannot read recorded answers: {exc.strerror or exc}") from exc
        for number, line in enumerate(lines, start=1):
            if line.strip():
                self._add(line, f"{path}:{number}")

    def _add(self, line: str, where: str) -> None:
        try:
            record = orjson.loads(line)
        except orjson.JSONDecodeError as exc:
            raise ConfigurationError(f"{where}: not JSON: {exc}") from exc
        if not isinstance(record, dict) or not isinstance(record.get("id"), str):
            raise ConfigurationError(f"{where}: a recording needs a string 'id'")
        answer = record.get("answer", "")
        if not isinstance(answer, str):
            raise ConfigurationError(f"{where}: answer must be a string")
        try:
            self._answers[record["id"]] = (answer, parse_tool_calls(record.get("tool_calls"), where))
        except TargetError as exc:
            raise ConfigurationError(str(exc)) from exc

    @property
    def name(self) -> str:
        return f"recorded:{self._path.name}"

    def ids(self) -> frozenset[str]:
        return frozenset(self._answers)

    async def answer(self, request: TargetRequest) -> TargetAnswer:
        found = self._answers.get(request.item_id)
        if found is None:
            raise TargetError(f"{self._path}: no recorded answer for id {request.item_id!r}")
        return TargetAnswer(request.item_id, found[0], self.name, found[1])


class CommandTarget:
    """Runs a program per item: the item as JSON on stdin, the answer on stdout."""

    def __init__(self, command: str, *, cwd: Path, limits: Limits | None = None) -> None:
        self._argv = shlex.split(command)
        if not self._argv:
            raise ConfigurationError("command target: the command is empty")
        self._command = command
        self._cwd = cwd
        self._limits = limits or Limits(wall_s=60.0, cpu_s=60, memory_mb=2048)

    @property
    def name(self) -> str:
        return f"command:{self._command}"

    async def answer(self, request: TargetRequest) -> TargetAnswer:
        started = time.perf_counter()
        result = await run_limited(self._argv, request.as_json(), cwd=self._cwd, limits=self._limits)
        if not result.ok:
            detail = result.error or f"exit code {result.returncode}: {result.stderr.decode(errors='replace')[-300:]}"
            raise TargetError(f"{self.name}: item {request.item_id!r}: {detail.strip()}")
        text, calls = _command_output(result.stdout.decode("utf-8", errors="replace"), self.name)
        return TargetAnswer(request.item_id, text, self.name, calls, latency_ms=(time.perf_counter() - started) * 1000)


def _command_output(stdout: str, where: str) -> tuple[str, tuple[ToolCall, ...]]:
    stripped = stdout.strip()
    if stripped.startswith("{"):
        try:
            body = orjson.loads(stripped)
        except orjson.JSONDecodeError:
            return stdout.rstrip("\n"), ()
        if isinstance(body, dict) and isinstance(body.get("answer"), str):
            return body["answer"], parse_tool_calls(body.get("tool_calls"), where)
    return stdout.rstrip("\n"), ()


class ActorTarget:
    """A persona agent answering the item's prompt as a stimulus."""

    def __init__(self, agent_id: str, actor: Actor, persona: Persona | None) -> None:
        self._agent_id = agent_id
        self._actor = actor
        self._persona = persona

    @property
    def name(self) -> str:
        return f"actor:{self._agent_id} ({self._actor.name})"

    async def answer(self, request: TargetRequest) -> TargetAnswer:
        started = time.perf_counter()
        act = ActRequest(agent_id=self._agent_id, persona=self._persona, stimulus=request.prompt)
        result = await self._actor.act(act)
        latency = (time.perf_counter() - started) * 1000
        return TargetAnswer(request.item_id, result.text or "", self.name, usage=result.usage, latency_ms=latency)


class TextModelTarget:
    """A plain LLM answering the item: its conversation (system text and turns) or its prompt."""

    def __init__(self, model: TextModel) -> None:
        self._model = model

    @property
    def name(self) -> str:
        return f"llm:{self._model.name}"

    async def answer(self, request: TargetRequest) -> TargetAnswer:
        system = "\n".join(str(m.get("content", "")) for m in request.messages if m.get("role") == "system")
        turns = [m for m in request.messages if m.get("role") in {"user", "assistant"}]
        messages = tuple(
            ChatMessage(role="assistant" if m["role"] == "assistant" else "user", content=str(m.get("content", "")))
            for m in turns
        )
        completion = await self._model.complete(
            CompletionRequest(
                messages=messages or (ChatMessage(role="user", content=request.prompt),),
                system=system,
                purpose="llm-target",
            )
        )
        return TargetAnswer(
            request.item_id, completion.text, self.name, usage=completion.usage, latency_ms=completion.latency_ms
        )


class CachedTarget:
    """Answers each distinct (target, item) once; later identical requests are served from memory.

    ``by_content`` keys the cache on the prompt, messages and payload without the item id (MetaReason
    variants with equal parameters). A request arriving while an identical one is in flight waits for that
    answer instead of calling the target a second time; a failed call is not cached.
    """

    def __init__(self, inner: Target, *, by_content: bool = False) -> None:
        self._inner = inner
        self._by_content = by_content
        self._cache: dict[str, TargetAnswer] = {}
        self._pending: dict[str, asyncio.Future[TargetAnswer]] = {}
        self.calls = 0

    @property
    def name(self) -> str:
        return self._inner.name

    async def answer(self, request: TargetRequest) -> TargetAnswer:
        key = request.content_key(self._inner.name) if self._by_content else request.cache_key(self._inner.name)
        hit = self._cache.get(key)
        if hit is None and key in self._pending:
            hit = await asyncio.shield(self._pending[key])
        if hit is not None:
            return TargetAnswer(request.item_id, hit.text, hit.target, hit.tool_calls, cached=True)
        self.calls += 1
        pending: asyncio.Future[TargetAnswer] = asyncio.get_running_loop().create_future()
        self._pending[key] = pending
        try:
            answer = await self._inner.answer(request)
        except BaseException as exc:
            if isinstance(exc, asyncio.CancelledError):
                pending.cancel()
            else:
                pending.set_exception(exc)
                pending.exception()  # retrieved here: waiters re-raise it, nobody else has to
            raise
        finally:
            del self._pending[key]
        self._cache[key] = answer
        pending.set_result(answer)
        return answer


#: builds the actor and persona for ``actor:AGENT_ID`` (supplied by the entry point, which knows the settings)
ActorResolver = Callable[[str], tuple[Actor, Persona | None]]
#: builds the text model of ``llm:MODEL``
ModelResolver = Callable[[str], TextModel]


def parse_target(
    spec: str, *, cwd: Path, resolve_actor: ActorResolver | None = None, resolve_model: ModelResolver | None = None
) -> Target:
    """The target named by ``spec`` (see the module docstring); a bad spec is a one-line ConfigurationError."""
    kind, sep, argument = spec.partition(":")
    if not sep or not argument.strip():
        raise ConfigurationError(f"target {spec!r}: expected one of {', '.join(TARGET_CHOICES)}")
    if kind == "recorded":
        path = Path(argument)
        return RecordedTarget(path if path.is_absolute() else cwd / path)
    if kind == "command":
        return CommandTarget(argument, cwd=cwd)
    if kind == "llm":
        if resolve_model is None:
            raise ConfigurationError(f"target {spec!r}: no text model is configured for this command")
        return TextModelTarget(resolve_model(argument))
    if kind == "actor":
        if resolve_actor is None:
            raise ConfigurationError(f"target {spec!r}: no actor is configured for this command")
        actor, persona = resolve_actor(argument)
        return ActorTarget(argument, actor, persona)
    raise ConfigurationError(f"target {spec!r}: unknown kind {kind!r}; expected one of {', '.join(TARGET_CHOICES)}")
