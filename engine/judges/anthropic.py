"""The Anthropic judge: the Messages API through the official ``anthropic`` SDK, with prompt caching.

Request layout (:mod:`engine.prompts`, stable parts first): the system text is one text block; the first user
turn holds three blocks, the target and persona, the evidence up to the judged action, and what is new (the
draft, the claims). Cache breakpoints (``cache_control: ephemeral``, at most four; Anthropic serves the longest
cached prefix ending at a breakpoint and writes the rest up to the last one) sit where a later call reads them:

- after the system text, read by every call of the mode;
- after the target and persona, read by the target's later checks;
- after the evidence, only when other calls share it (``Prompt.share_history``, a draft's dimensions run
  staged): marked on calls that run side by side, each would write it and none read it, at 1.25× the price;
- after the new part, only with a double check, whose second turn repeats the whole first one.

Temperature is 0; it is sent as an extra body field because the installed SDK has no ``temperature``
parameter any more (``temperature=None`` omits it). The SDK's own retries are switched off
(``max_retries=0``): the retry, deadline, repair and double-check policy is :class:`engine.judges.llm.LlmJudge`'s.

The API key is only taken from the ``api_key`` argument (the factory reads ``ANTHROPIC_API_KEY``). It is
never part of the name, the repr, an error message or a log record.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

from anthropic.types import AssistantMessageParam, MessageParam, TextBlockParam, UserMessageParam

from engine.errors import ConfigurationError
from engine.judges.llm import CallPolicy, LlmJudge, Reply, Turn
from engine.llm.anthropic import CACHED, async_client, create_message
from engine.prompts import Prompt
from engine.settings import DEFAULT_ANTHROPIC_MODEL


class AnthropicJudge(LlmJudge):
    """Answers judge requests with a Claude model; ``base_url`` points it at a compatible server."""

    def __init__(
        self,
        *,
        api_key: str,
        model: str = DEFAULT_ANTHROPIC_MODEL,
        base_url: str | None = None,
        policy: CallPolicy | None = None,
        max_tokens: int = 2048,
        temperature: float | None = 0.0,
        rng: random.Random | None = None,
        prompt_cache: bool = True,
    ) -> None:
        """``prompt_cache=False`` sends no breakpoint at all (the benchmark's uncached anchor)."""
        if not api_key:
            raise ConfigurationError("the Anthropic judge needs an API key (ANTHROPIC_API_KEY is not set)")
        policy = policy or CallPolicy()
        super().__init__(f"anthropic:{model}", policy, rng=rng)
        self._model = model
        self._max_tokens = max_tokens
        self._cache = prompt_cache
        # The installed SDK no longer has a ``temperature`` parameter; the API field is sent as an extra.
        self._extra_body = {"temperature": temperature} if temperature is not None else None
        self._client = async_client(api_key=api_key, base_url=base_url, deadline_s=policy.deadline_s)

    @property
    def model(self) -> str:
        return self._model

    async def aclose(self) -> None:
        await self._client.close()

    async def _send(self, prompt: Prompt, followups: Sequence[Turn]) -> Reply:
        text, usage = await create_message(
            self._client,
            self.name,
            model=self._model,
            max_tokens=self._max_tokens,
            system=[_block(prompt.system, self._cache)],
            messages=_messages(prompt, followups, cache=self._cache),
            extra_body=self._extra_body,
        )
        return Reply(text=text, usage=usage)


def _block(text: str, marked: bool) -> TextBlockParam:
    if marked:
        return TextBlockParam(type="text", text=text, cache_control=CACHED)
    return TextBlockParam(type="text", text=text)


def _messages(prompt: Prompt, followups: Sequence[Turn], *, cache: bool = True) -> list[MessageParam]:
    messages: list[MessageParam] = [
        UserMessageParam(
            role="user",
            content=[
                _block(prompt.about, cache),
                _block(prompt.history, cache and prompt.share_history),
                _block(prompt.new, cache and prompt.followed_up),
            ],
        )
    ]
    for role, text in followups:
        if role == "assistant":
            messages.append(AssistantMessageParam(role="assistant", content=text))
        else:
            messages.append(UserMessageParam(role="user", content=text))
    return messages
