"""Shared machinery of the fake LLM HTTP servers: scripted behaviours, request recording, automatic answers.

A fake server answers each request with the next queued :class:`Behaviour` (or the result of a callable),
falling back to its default behaviour. The default behaviour is an *automatic answer*: the server reads the
claims out of the judge prompt (``<claims mode="..." count="N">`` and its ``[i] id="..."`` lines, as rendered
by :mod:`engine.prompts`) and replies with valid JSON for every claim, so benchmarks and end-to-end tests can
use it without scripting anything.

These are test doubles: they listen on 127.0.0.1 only and never reach a real model.
"""

from __future__ import annotations

import abc
import asyncio
import json
import re
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Self

from aiohttp import web

_CLAIMS = re.compile(r'<claims mode="(?P<mode>\w+)" count="(?P<count>\d+)">')
_CLAIM_ID = re.compile(r'^\[\d+\] id="(?P<id>(?:[^"\\]|\\.)*)"', re.MULTILINE)


@dataclass(frozen=True, slots=True)
class Behaviour:
    """How the fake answers one request.

    ``status`` 200 answers with ``text`` (or an automatic answer when ``text`` is None, with every value
    replaced by ``value`` when that is set); any other status answers with an error body of ``error_type``.
    ``delay_s`` waits before answering. ``truncated`` cuts a 200 body in half (``application/json`` that does not
    parse, as a connection cut mid-body looks to a client).
    """

    status: int = 200
    text: str | None = None
    value: object = None
    error_type: str = "api_error"
    retry_after: float | None = None
    delay_s: float = 0.0
    truncated: bool = False

    @classmethod
    def answer(cls, text: str | None = None, *, delay_s: float = 0.0) -> Behaviour:
        return cls(text=text, delay_s=delay_s)

    @classmethod
    def auto(cls, *, value: object = None, delay_s: float = 0.0) -> Behaviour:
        """An automatic answer; ``value`` (if given) replaces every claim's value, e.g. 12 (out of range)."""
        return cls(value=value, delay_s=delay_s)

    @classmethod
    def rate_limited(cls, retry_after: float = 0.0) -> Behaviour:
        return cls(status=429, error_type="rate_limit_error", retry_after=retry_after)

    @classmethod
    def overloaded(cls) -> Behaviour:
        return cls(status=529, error_type="overloaded_error")

    @classmethod
    def server_error(cls, status: int = 500) -> Behaviour:
        return cls(status=status, error_type="api_error")

    @classmethod
    def malformed(cls, text: str = "The agent seems fine to me, maybe a seven.") -> Behaviour:
        return cls(text=text)

    @classmethod
    def slow(cls, delay_s: float) -> Behaviour:
        return cls(delay_s=delay_s)

    @classmethod
    def truncated_body(cls) -> Behaviour:
        return cls(truncated=True)


@dataclass(frozen=True, slots=True)
class ReceivedRequest:
    """One request the fake received: its JSON body and its headers (lower-cased names)."""

    path: str
    body: dict[str, Any]
    headers: Mapping[str, str]


BehaviourSource = Iterable[Behaviour] | Callable[[ReceivedRequest], Behaviour]


@dataclass(frozen=True, slots=True)
class AutoAnswers:
    """Values of automatic answers: ``score`` for score mode, ``check`` for check mode, ``items`` to list."""

    score: int = 7
    check: bool = True
    items: tuple[str, ...] = ("first idea", "second idea")


def auto_answer(prompt_text: str, answers: AutoAnswers, value: object = None) -> str:
    """A valid JSON reply to a judge prompt (individual or batch); a one-claim score if it has no claims."""
    header = _CLAIMS.search(prompt_text)
    mode = header.group("mode") if header else "score"
    start = header.end() if header else 0
    ids = [json.loads(f'"{m.group("id")}"') for m in _CLAIM_ID.finditer(prompt_text, start)]
    count = int(header.group("count")) if header else 1
    ids = ids[:count] or ["claim"]

    def entry(claim_id: str | None) -> dict[str, Any]:
        out: dict[str, Any] = {"reasoning": f"automatic answer of the fake server for {claim_id or 'the claim'}"}
        if claim_id is not None:
            out = {"id": claim_id, **out}
        if mode == "enumerate":
            out["items"] = list(answers.items)
            out["value"] = len(answers.items) if value is None else value
        else:
            out["value"] = (answers.check if mode == "check" else answers.score) if value is None else value
        return out

    if len(ids) == 1:
        return json.dumps(entry(None))
    return json.dumps({"results": [entry(claim_id) for claim_id in ids]})


@dataclass
class _Script:
    queue: deque[Behaviour] = field(default_factory=deque)
    function: Callable[[ReceivedRequest], Behaviour] | None = None


class FakeLlmServer(abc.ABC):
    """Base of the fake servers: an aiohttp app on 127.0.0.1 with a behaviour script. Use ``async with``."""

    route: str = "/"

    def __init__(
        self,
        behaviours: BehaviourSource | None = None,
        *,
        default: Behaviour | None = None,
        answers: AutoAnswers | None = None,
        host: str = "127.0.0.1",
        port: int = 0,
    ) -> None:
        self._script = _Script()
        if callable(behaviours):
            self._script.function = behaviours
        elif behaviours is not None:
            self._script.queue.extend(behaviours)
        self.default = default or Behaviour()
        self.answers = answers or AutoAnswers()
        self.requests: list[ReceivedRequest] = []
        self._host = host
        self._port = port
        self._runner: web.AppRunner | None = None

    def enqueue(self, *behaviours: Behaviour) -> None:
        self._script.queue.extend(behaviours)

    @property
    def port(self) -> int:
        if self._runner is None:
            raise RuntimeError("the fake server is not running")
        address = self._runner.addresses[0]
        return int(address[1])

    @property
    def root_url(self) -> str:
        return f"http://{self._host}:{self.port}"

    async def start(self) -> None:
        app = web.Application()
        app.router.add_post(self.route, self._handle)
        self._runner = web.AppRunner(app, access_log=None, shutdown_timeout=0.1)
        await self._runner.setup()
        await web.TCPSite(self._runner, self._host, self._port).start()

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.stop()

    def _next(self, received: ReceivedRequest) -> Behaviour:
        if self._script.function is not None:
            return self._script.function(received)
        return self._script.queue.popleft() if self._script.queue else self.default

    async def _handle(self, request: web.Request) -> web.Response:
        try:
            body = await request.json()
        except json.JSONDecodeError:
            return web.json_response({"error": "body is not JSON"}, status=400)
        received = ReceivedRequest(
            path=request.path, body=body, headers={k.lower(): v for k, v in request.headers.items()}
        )
        self.requests.append(received)
        behaviour = self._next(received)
        state = self._arrived(body, behaviour) if behaviour.status == 200 else None
        if isinstance(state, web.Response):  # the request itself is refused (400)
            return state
        if behaviour.delay_s > 0:
            await asyncio.sleep(behaviour.delay_s)
        if behaviour.status != 200:
            headers = {} if behaviour.retry_after is None else {"retry-after": f"{behaviour.retry_after:g}"}
            return web.json_response(self._error_body(behaviour), status=behaviour.status, headers=headers)
        prompt_text = self.prompt_text(body)
        text = behaviour.text if behaviour.text is not None else auto_answer(prompt_text, self.answers, behaviour.value)
        if behaviour.truncated:
            whole = json.dumps(self._success_body(body, text, state))
            return web.Response(text=whole[: len(whole) // 2], content_type="application/json")
        return web.json_response(self._success_body(body, text, state))

    @abc.abstractmethod
    def prompt_text(self, body: dict[str, Any]) -> str:
        """All prompt text of a request body (used to find the claims)."""

    @abc.abstractmethod
    def _error_body(self, behaviour: Behaviour) -> dict[str, Any]: ...

    def _arrived(self, body: dict[str, Any], behaviour: Behaviour) -> Any:
        """What a server works out when a request it will answer arrives (before the answer's delay): the
        Messages API fake reads and writes its prompt cache here. Passed to :meth:`_success_body`; a
        ``web.Response`` is sent at once instead (a request the API refuses)."""
        return None

    @abc.abstractmethod
    def _success_body(self, body: dict[str, Any], text: str, state: Any = None) -> dict[str, Any]: ...


def estimate_tokens(chars: int) -> int:
    """The fakes' token estimate: one token per four characters, rounded up."""
    return -(-chars // 4)
