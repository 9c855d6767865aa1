"""Build an actor from ``--actor SPEC``: ``anthropic[:MODEL]`` | ``openai-compatible[:MODEL]`` |
``scripted[:RULES.yaml]``; empty means anthropic when ``ANTHROPIC_API_KEY`` is set, else scripted.

Provider actors are :class:`~engine.actors.llm.LlmActor` over :func:`engine.llm.factory.make_text_model`;
``scripted`` is the :class:`~engine.actors.scripted.ScriptedActor` (``scripted:RULES.yaml`` with its rules).
The actor's ``name`` says which it is and goes into every output.
"""

from __future__ import annotations

from pathlib import Path

from engine.actors.base import Actor
from engine.actors.llm import LlmActor
from engine.actors.scripted import ScriptedActor, ScriptedRules
from engine.llm.factory import make_text_model, split_spec
from engine.settings import Settings


def make_actor(spec: str, settings: Settings) -> Actor:
    kind, argument = split_spec(spec, settings)
    if kind == "scripted":
        if not argument:
            return ScriptedActor()
        path = Path(argument).expanduser()
        return ScriptedActor(ScriptedRules.from_file(path), label=path.name)
    return LlmActor(make_text_model(spec, settings))
