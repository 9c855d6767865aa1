"""``scripted:population``: a deterministic stand-in for the factory's model (tests, demos, dry pipelines).

Not a model: it answers each factory stage (routed by ``CompletionRequest.purpose``) with valid JSON derived
from the prompt by hashing, so the same prompt always gets the same answer. Every persona it writes says
it was scripted (``other_facts``), and the population manifest names it.
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any

from engine.llm.base import Completion, CompletionRequest
from engine.models import TokenUsage

_FIRST = ("Ana", "Ben", "Chloe", "Dev", "Elif", "Femi", "Grace", "Hugo", "Iris", "Jon", "Kai", "Lena", "Mateo",
          "Nora", "Omar", "Pia", "Quinn", "Rosa", "Sami", "Tess")  # fmt: skip
_LAST = ("Alvarez", "Brooks", "Chen", "Duarte", "Evans", "Fischer", "Garcia", "Haddad", "Ito", "Jensen", "Kowalski",
         "Lopez", "Mensah", "Novak", "Okafor", "Patel")  # fmt: skip
_JOBS = ("nurse", "electrician", "teacher", "accountant", "farmer", "software tester", "bus driver", "chef",
         "pharmacist", "shop owner", "retired postman", "student")  # fmt: skip
_LEVELS = ("very low", "low", "medium", "high", "very high")
_DIMENSIONS = {
    "age": {"min": 18, "max": 85},
    "occupation": list(_JOBS),
    "politics": {"left": 0.3, "centre": 0.4, "right": 0.3},
    "agreeableness": list(_LEVELS),
    "income": ["low", "middle", "high"],
}


def _h(*parts: object) -> int:
    return int.from_bytes(hashlib.sha256("|".join(map(str, parts)).encode()).digest()[:8], "big")


def _tag(text: str, tag: str) -> str:
    match = re.search(rf"<{tag}>(.*?)</{tag}>", text, re.DOTALL)
    return match.group(1) if match else ""


def _plan(n: int, text: str) -> dict[str, Any]:
    subs = []
    left, k = n, 0
    while left > 0:
        quantity = min(left, 1 + _h(text, k) % 3)
        chars = {"occupation": _JOBS[_h(text, k, "j") % len(_JOBS)], "politics": ("left", "centre", "right")[k % 3],
                 "agreeableness": _LEVELS[_h(text, k, "a") % 5], "age": 18 + _h(text, k, "g") % 67}  # fmt: skip
        subs.append({"description": f"group {k + 1}", "characteristics": chars, "quantity": quantity})
        left, k = left - quantity, k + 1
    return {"subpopulations": subs}


def _persona(text: str) -> dict[str, Any]:
    person = json.loads(_tag(text, "characteristics") or "{}")
    name = _tag(text, "name")
    level = person.get("agreeableness", "medium")
    job = person.get("occupation", "clerk")
    return {
        "name": name, "age": int(person.get("age", 40)), "nationality": "American",
        "occupation": {"title": job, "description": f"Works as a {job}."},
        "personality": {"traits": ["curious" if _h(name) % 2 else "cautious"],
                        "big_five": {"agreeableness": level, "openness": _LEVELS[_h(name, "o") % 5]}},
        "beliefs": [f"Politics: {person.get('politics', 'centre')}.", "Good work deserves a fair price."],
        "style": "plain, direct sentences",
        "other_facts": ["This persona was written by the scripted population model, not by an LLM."],
    }  # fmt: skip


class ScriptedPopulationModel:
    def __init__(self) -> None:
        self.requests: list[CompletionRequest] = []

    @property
    def name(self) -> str:
        return "scripted:population"

    async def complete(self, request: CompletionRequest) -> Completion:
        self.requests.append(request)
        text = request.messages[0].content
        stage = request.purpose.removeprefix("population:")
        n = int(_tag(text, "n") or 0)
        if stage == "dimensions":
            reply: Any = {"dimensions": _DIMENSIONS}
        elif stage == "plan":
            reply = _plan(n, text)
        elif stage == "name":
            reply = {"name": f"{_FIRST[_h(text) % len(_FIRST)]} {_LAST[_h(text, 'l') % len(_LAST)]}"}
        else:
            reply = _persona(text)
        out = json.dumps(reply)
        return Completion(out, self.name, TokenUsage(len(text) // 4, len(out) // 4))
