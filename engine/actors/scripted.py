"""The scripted actor: deterministic, persona-aware text with controllable repetition, drift and silence.

Not a model. It exists for tests, demos, CI and benchmarks, is selected explicitly (``--actor scripted`` or
``scripted:RULES.yaml``, or by default when no ``ANTHROPIC_API_KEY`` is set) and every output names it
``scripted:…``. Rules (all optional; a YAML file validated with ``FILE:LINE`` errors)::

    seed: 0            # varies the generated ideas
    latency_ms: 0      # answer after this long (benchmarks)
    repeat_every: 0    # every Nth own message repeats the previous one word for word (0: never)
    drift_after: 0     # from this many own messages on, the agent drifts into bland agreement (0: never)
    silence_every: 0   # about one turn in N the agent says nothing (0: never; seeded by the conversation length)
    stubborn: false    # a retry sends the same text again instead of rewriting it

A message names a new idea built from the persona (first name, occupation, a trait or belief); a retry
(gate feedback) or an intervention's nudge always yields a fresh idea. The wording depends on who speaks (the
persona id, not the session-scoped agent id, which names the run and the arm) and on the agent's place in the
conversation, never on the run: identical agents on identical schedules say the same things in both arms of an
experiment and in a resumed one, so only what the arms do differently (a nudge, a retry) changes the output.
Asked to consolidate (a prompt that mentions "consolidate"), it lists every idea of the conversation as
``- NAME: TEXT`` lines, which :class:`ScriptedListModel` turns into the extraction's JSON list.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import re
import time
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from engine.actors.base import ActRequest, ActResult
from engine.errors import PropositionFileError
from engine.llm.base import Completion, CompletionRequest
from engine.models import EventKind, Persona, TokenUsage
from engine.propositions.issues import validate_document
from engine.propositions.yamlsource import read_yaml

_ADJECTIVES = ("Solar", "Pocket", "Quiet", "Shared", "Smart", "Modular", "Local", "Floating", "Night", "Green",
               "Open", "Tiny", "Rapid", "Circular", "Kind", "Bold")  # fmt: skip
_NOUNS = ("Pantry", "Garage", "Library", "Clinic", "Market", "Studio", "Courier", "Garden", "Workshop", "Lounge",
          "Exchange", "Kitchen", "Dock", "Atelier", "Hub", "Commons")  # fmt: skip
_AUDIENCES = ("busy parents", "retirees", "students", "small shops", "night-shift workers", "new neighbours",
              "commuters", "farmers")  # fmt: skip
DRIFT_MARKER = "synergy"
_IDEA = re.compile(r"'(?P<name>[^']+)'")


class ScriptedRules(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    seed: int = 0
    latency_ms: float = Field(0.0, ge=0)
    repeat_every: int = Field(0, ge=0)
    drift_after: int = Field(0, ge=0)
    silence_every: int = Field(0, ge=0)
    stubborn: bool = False

    @classmethod
    def from_file(cls, path: Path) -> ScriptedRules:
        rules, issues = validate_document(read_yaml(path), cls, "scripted actor rules")
        if rules is None or issues:
            raise PropositionFileError(issues)
        return rules


def _h(*key: object) -> int:
    return int.from_bytes(hashlib.sha256("|".join(map(str, key)).encode()).digest()[:4], "big")


def _pick(options: tuple[str, ...], *key: object) -> str:
    return options[_h(*key) % len(options)]


def _speaker(request: ActRequest) -> str:
    """Who speaks, independently of the run: the persona's id, else (no persona) the agent id."""
    return request.persona.id if request.persona is not None else request.agent_id


def _flavour(persona: Persona | None) -> tuple[str, str, str]:
    """(first name, occupation, a trait or belief) from the spec, with neutral fallbacks."""
    if persona is None:
        return "I", "someone", "it should be simple"
    spec = persona.spec()
    occupation = spec.get("occupation", "")
    if isinstance(occupation, dict):
        occupation = occupation.get("title", "")
    personality = spec.get("personality", "")
    traits = personality.get("traits", []) if isinstance(personality, dict) else []
    beliefs = [b for b in spec.get("beliefs", []) if isinstance(b, str)]
    if beliefs:
        angle = beliefs[0]
    elif traits:
        angle = f"I am {traits[0]}"
    else:
        angle = "it should be simple"
    return persona.name.split()[0], str(occupation or "someone who cares"), str(angle).rstrip(".")


class ScriptedActor:
    def __init__(self, rules: ScriptedRules | None = None, *, label: str = "actor") -> None:
        self.rules = rules or ScriptedRules()
        self._label = label

    @property
    def name(self) -> str:
        return f"scripted:{self._label}"

    async def act(self, request: ActRequest) -> ActResult:
        started = time.perf_counter()
        if self.rules.latency_ms:
            await asyncio.sleep(self.rules.latency_ms / 1000.0)
        text = self._text(request)
        usage = TokenUsage(output_tokens=len(text.split())) if text else TokenUsage()
        return ActResult(text, self.name, usage, (time.perf_counter() - started) * 1000.0)

    def _text(self, request: ActRequest) -> str | None:
        mine = [e.text for e in request.trajectory if e.kind is EventKind.ACTION and e.agent_id == request.agent_id]
        n, rules, first_try = len(mine), self.rules, request.feedback is None
        if request.stimulus and "consolidat" in request.stimulus.lower():
            return self._consolidation(request)
        if (
            first_try
            and rules.silence_every
            and _h(rules.seed, _speaker(request), len(request.trajectory)) % rules.silence_every == 0
        ):
            return None
        if first_try and not request.nudge and mine and rules.repeat_every and n % rules.repeat_every == 0:
            return mine[-1]
        if first_try and not request.nudge and rules.drift_after and n >= rules.drift_after:
            return f"Honestly I agree with everyone, the {DRIFT_MARKER} here is great (point {n + 1})."
        attempt = 1 if rules.stubborn else request.attempt
        return self._idea(request, n, attempt)

    def _idea(self, request: ActRequest, n: int, attempt: int) -> str:
        first, occupation, angle = _flavour(request.persona)
        key = (self.rules.seed, _speaker(request), n, attempt, bool(request.nudge))
        name = f"{_pick(_ADJECTIVES, 'a', *key)} {_pick(_NOUNS, 'n', *key)}"
        audience = _pick(_AUDIENCES, "u", *key)
        opening = "Something completely different: " if request.nudge else ""
        return (f"{opening}{first} here, speaking as {occupation}. My idea is '{name}', "
                f"a service for {audience}, because {angle[0].lower() + angle[1:]}.")  # fmt: skip

    def _consolidation(self, request: ActRequest) -> str:
        ideas: dict[str, str] = {}
        for event in request.trajectory:
            if event.kind is EventKind.ACTION and (match := _IDEA.search(event.text)):
                ideas.setdefault(match.group("name"), event.text)
        lines = [f"- {name}: {text}" for name, text in ideas.items()]
        return "Here is what we came up with:\n" + ("\n".join(lines) if lines else "- nothing yet")


class ScriptedListModel:
    """A scripted text model for extraction: the ``- NAME: TEXT`` lines of the request as a JSON list."""

    def __init__(self, label: str = "extractor") -> None:
        self._label = label

    @property
    def name(self) -> str:
        return f"scripted:{self._label}"

    async def complete(self, request: CompletionRequest) -> Completion:
        text = request.last_user_text
        body = text.split("<text>", 1)[-1].split("</text>", 1)[0]
        items = [
            {"name": m.group(1).strip(), "description": m.group(2).strip()}
            for m in re.finditer(r"^- ([^:\n]+): (.+)$", body, re.MULTILINE)
        ]
        reply = json.dumps(items)
        return Completion(reply, self.name, TokenUsage(len(text.split()), len(reply.split())))
