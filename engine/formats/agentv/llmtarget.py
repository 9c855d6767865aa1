"""A plain LLM as the target: the case's conversation goes to a :class:`~engine.llm.base.TextModel`."""

from __future__ import annotations

from engine.formats.targets import TargetAnswer, TargetRequest
from engine.llm.base import ChatMessage, CompletionRequest, TextModel


class TextModelTarget:
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
                purpose="agentv-target",
            )
        )
        return TargetAnswer(
            request.item_id, completion.text, self.name, usage=completion.usage, latency_ms=completion.latency_ms
        )
