"""What each Plexus node class does with the state: ask the model or run code, and return fields to set.

Every node returns a dict of state fields; the graph runner stores them at the top level and under the
node's name. LLM nodes render their prompts from the state (:mod:`.templates`) and ask the score's
:class:`~engine.llm.base.TextModel`; code nodes go through :mod:`.code` (out of process).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

from rapidfuzz import fuzz, process

from engine.formats.plexus.code import CODE_LIMITS, CodeRequest, run_code
from engine.formats.plexus.model import Node
from engine.formats.plexus.parsing import correction_message, parse_class, parse_confidence
from engine.formats.plexus.templates import render
from engine.formats.sandbox import Limits
from engine.formats.usercode import STRICT, CodeSandbox
from engine.llm.base import ChatMessage, CompletionRequest, TextModel

EXTRACT_CUTOFF = 50
SLICE_CUTOFF = 70
UNKNOWN = "unknown"
_SENTENCE = re.compile(r"[^.!?\n]+[.!?]*")
_CONFIDENCE_ASK = "\nAfter your answer, add a last line 'Confidence: P': your probability (0 to 1) that it is right."


@dataclass(frozen=True)
class NodeContext:
    """What nodes run with: the text model answering LLM nodes (per score when scores name different ones),
    and how code nodes run: their limits, the sandbox policy of the run, the scorecard's folder they see."""

    model: TextModel
    code_limits: Limits = CODE_LIMITS
    score_models: Mapping[str, TextModel] = field(default_factory=dict)
    sandbox: CodeSandbox = STRICT
    code_folder: Path | None = None

    def for_score(self, name: str) -> NodeContext:
        model = self.score_models.get(name)
        return self if model is None else replace(self, model=model, score_models={})

    @property
    def label(self) -> str:
        """Every model that may answer, for labelling outputs (``scripted:…`` stays visible), and a mark when
        code nodes run without the sandbox (``--allow-unsandboxed-code`` where it cannot be had)."""
        names = ", ".join(sorted({self.model.name, *(m.name for m in self.score_models.values())}))
        return f"{names}; {self.sandbox.label}" if self.sandbox.label else names


def _messages(node: Node, state: dict[str, Any]) -> tuple[str, str]:
    return render(node.system_message, state), render(node.user_message or "{{text}}", state)


async def _ask(ctx: NodeContext, node: Node, system: str, turns: list[ChatMessage]) -> str:
    request = CompletionRequest(
        tuple(turns), system=system, temperature=node.temperature or 0.0, purpose=f"plexus:{node.node_class}"
    )
    return (await ctx.model.complete(request)).text


def classes_of(node: Node) -> list[str]:
    if node.node_class == "YesOrNoClassifier":
        return ["Yes", "No"]
    return list(node.valid_classes or ["Yes", "No"])


async def classify(ctx: NodeContext, node: Node, state: dict[str, Any]) -> dict[str, Any]:
    classes = classes_of(node)
    system, user = _messages(node, state)
    wants_confidence = node.enable_confidence or node.confidence
    turns = [ChatMessage("user", user + (_CONFIDENCE_ASK if wants_confidence else ""))]
    reply = ""
    for _attempt in range(node.maximum_retry_count + 1):
        reply = await _ask(ctx, node, system, turns)
        found = parse_class(reply, classes, parse_from_start=node.parse_from_start)
        if found is not None:
            confidence = parse_confidence(reply) if wants_confidence else None
            return {"classification": found, "explanation": reply.strip(), "confidence": confidence}
        turns += [ChatMessage("assistant", reply), ChatMessage("user", correction_message(classes))]
    return {"classification": UNKNOWN, "explanation": reply.strip(), "confidence": None}


def best_span(answer: str, source: str, cutoff: float) -> str | None:
    """The part of ``source`` that best matches ``answer`` (fuzzy partial match), or None below ``cutoff``."""
    if not answer.strip() or not source.strip():
        return None
    alignment = fuzz.partial_ratio_alignment(answer, source, score_cutoff=cutoff)
    if alignment is None:
        return None
    start, end = alignment.dest_start, alignment.dest_end
    while start > 0 and source[start - 1].isalnum():  # the window has the answer's length: widen to whole words
        start -= 1
    while end < len(source) and source[end].isalnum():
        end += 1
    return source[start:end].strip()


async def extract(ctx: NodeContext, node: Node, state: dict[str, Any]) -> dict[str, Any]:
    system, user = _messages(node, state)
    reply = (await _ask(ctx, node, system, [ChatMessage("user", user)])).strip()
    if node.trust_model_output:
        extracted = reply
    else:
        extracted = best_span(reply, str(state.get("text", "")), EXTRACT_CUTOFF) or reply
    return {"extracted_text": extracted, "explanation": reply}


def slice_text(quote: str, text: str) -> tuple[str, str]:
    """``(before, after)``: the text split at the sentence best matching ``quote`` (partial ratio ≥ 70)."""
    quote = quote.strip().strip("\"'")
    quote = quote.removeprefix("Quote:").strip().strip("\"'")
    sentences = [m.group(0).strip() for m in _SENTENCE.finditer(text) if m.group(0).strip()]
    best = process.extractOne(quote, sentences, scorer=fuzz.partial_ratio, score_cutoff=SLICE_CUTOFF) if quote else None
    if best is None:
        return "", text
    start = text.index(best[0])
    return text[:start], text[start:]


async def slice_node(ctx: NodeContext, node: Node, state: dict[str, Any]) -> dict[str, Any]:
    system, user = _messages(node, state)
    reply = await _ask(ctx, node, system, [ChatMessage("user", user)])
    before, after = slice_text(reply, str(state.get("text", "")))
    return {"before": before, "after": after, "explanation": reply.strip()}


def _code_state(state: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in state.items() if k not in {"text", "metadata", "results"}}


async def _run_code_node(
    ctx: NodeContext, node: Node, state: dict[str, Any], kind: Literal["score", "node"], function: str
) -> Any:
    text, metadata = str(state.get("text", "")), dict(state.get("metadata") or {})
    request = CodeRequest(kind, node.code or "", function, node.parameters, text, metadata, _code_state(state))
    return await run_code(request, limits=ctx.code_limits, sandbox=ctx.sandbox, folder=ctx.code_folder)


async def logical_classifier(ctx: NodeContext, node: Node, state: dict[str, Any]) -> dict[str, Any]:
    answer = await _run_code_node(ctx, node, state, "score", "score")
    if answer is None:
        return {}
    metadata = dict(answer.get("metadata") or {})
    explanation = answer.get("explanation") or metadata.get("explanation")
    value = answer.get("value")
    return {**metadata, "classification": value, "value": value, "explanation": explanation}


async def logical_node(ctx: NodeContext, node: Node, state: dict[str, Any]) -> dict[str, Any]:
    answer = await _run_code_node(ctx, node, state, "node", node.function_name or "")
    if answer is None:
        return {}
    if not isinstance(answer, dict):
        return {"value": answer}
    return dict(answer)


async def run_node(ctx: NodeContext, node: Node, state: dict[str, Any]) -> dict[str, Any]:
    runners = {
        "Extractor": extract,
        "BeforeAfterSlicer": slice_node,
        "LogicalClassifier": logical_classifier,
        "LogicalNode": logical_node,
    }
    return await runners.get(node.node_class, classify)(ctx, node, state)
