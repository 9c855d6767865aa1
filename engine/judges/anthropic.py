"""The Anthropic judge: the Messages API through the official ``anthropic`` SDK, with prompt caching.

Request layout (:mod:`engine.prompts`, stable parts first): the system text is one text block; the first user
turn holds the evidence (the data section up to the last trajectory event, one block per trajectory line),
then the draft (the rest of the data section), the target and persona, and what is new (the claims). Cache
breakpoints (``cache_control: ephemeral``, at most four; Anthropic serves the longest cached prefix ending at
a block boundary where an earlier request wrote one, looking back about 20 blocks from each breakpoint, and
writes the rest up to the last breakpoint) sit where a later call reads them, in this order of priority:

- after the evidence, always: the conversation's next check reads it (its evidence extends this one while the
  window only grows), as do the draft's other dimensions; what it writes is what is new since that check;
- after the new part, only with a double check, whose second turn repeats the whole first one;
- after the draft, and after a persona, only when other calls share them (``Prompt.share_history``, a draft's
  dimensions run staged): marked on calls that run side by side, each would write them and none read them,
  at 1.25× the price;
- after the trajectory's first events (``Prompt.head_blocks``, when events are omitted): read when the
  window's recent part has moved;
- after the system text, when a breakpoint is left.

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

#: Anthropic accepts at most this many ``cache_control`` blocks in one request
MAX_BREAKPOINTS = 4


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
            system=[_block(prompt.system, _system_marked(prompt, self._cache))],
            messages=_messages(prompt, followups, cache=self._cache),
            extra_body=self._extra_body,
        )
        return Reply(text=text, usage=usage)


def _block(text: str, marked: bool) -> TextBlockParam:
    if marked:
        return TextBlockParam(type="text", text=text, cache_control=CACHED)
    return TextBlockParam(type="text", text=text)


def _marks(prompt: Prompt) -> list[int]:
    """Indices of the user blocks (evidence, draft, about, new) that get a breakpoint, by the priorities of
    the module docstring; the system text gets one when fewer than :data:`MAX_BREAKPOINTS` are taken."""
    last_evidence = len(prompt.evidence) - 1
    wanted = [
        last_evidence,
        last_evidence + 3 if prompt.followed_up else None,
        last_evidence + 1 if prompt.share_history else None,
        last_evidence + 2 if prompt.share_history and prompt.with_persona else None,
        prompt.head_blocks - 1 if prompt.head_blocks else None,
    ]
    return list(dict.fromkeys(i for i in wanted if i is not None))[:MAX_BREAKPOINTS]


def _user_blocks(prompt: Prompt, cache: bool) -> list[TextBlockParam]:
    marked = set(_marks(prompt)) if cache else set()
    texts = [*prompt.evidence, prompt.draft, prompt.about, prompt.new]
    return [_block(text, i in marked) for i, text in enumerate(texts)]


def _system_marked(prompt: Prompt, cache: bool) -> bool:
    return cache and len(_marks(prompt)) < MAX_BREAKPOINTS


def _messages(prompt: Prompt, followups: Sequence[Turn], *, cache: bool = True) -> list[MessageParam]:
    messages: list[MessageParam] = [UserMessageParam(role="user", content=_user_blocks(prompt, cache))]
    for role, text in followups:
        if role == "assistant":
            messages.append(AssistantMessageParam(role="assistant", content=text))
        else:
            messages.append(UserMessageParam(role="user", content=text))
    return messages
