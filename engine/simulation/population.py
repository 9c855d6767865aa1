"""The population factory (TinyTroupe's three stages), resumable and deterministic under a seed.

1. one call: the model proposes *sampling dimensions* for the profile (value lists, ranges or proportions);
2. one call: the model writes a *sampling plan*: sub-populations with characteristics and quantities that sum
   to N (a plan that does not is scaled to N by code, largest remainders first);
3. code: the plan is flattened (each sub-population copied ``quantity`` times) and shuffled with the seed;
   then per person one call names them (names already given are listed, so they differ) and one call
   writes their persona specification: 2 + 2N calls in all.

Every stage's output is written to ``DIR/stages/`` (and each persona to ``DIR/personas/pNNN.json``) as soon as
it exists, so a rerun after a crash or kill resumes: finished stages and people cost nothing again. The bundled
persona fragments go to ``DIR/fragments/``, so every bundled scenario runs on the population. Person calls run
concurrently, at most ``concurrency`` at a time; each person's result depends only on its own characteristics,
its index and the names given before it, so the output does not depend on timing.
"""

from __future__ import annotations

import asyncio
import json
import random
import re
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from engine.errors import ConfigurationError, JudgeOutputError
from engine.llm.base import ChatMessage, CompletionRequest, TextModel
from engine.models import Persona, TokenUsage
from engine.personas import FRAGMENTS_FOLDER
from engine.settings import bundled_simulations
from engine.simulation.profiles import Profile

BUNDLED_TINY = bundled_simulations() / "populations" / "tiny"
STAGE_MAX_TOKENS = {"dimensions": 2500, "plan": 4000, "name": 60, "persona": 1800}
PROMPT_TOKENS = {"dimensions": 600, "plan": 3000, "name": 400, "persona": 900}
_SYSTEM = "You help design realistic, varied populations of people for social simulations. Answer in JSON only."


def _dimensions_prompt(profile: Profile, n: int) -> str:
    return (f"Population: {profile.description}\nRequirements: {profile.requirements}\n\n"
            f"We will sample <n>{n}</n> people. Propose the dimensions to sample them on. Answer with "
            '{"dimensions": {NAME: [values] | {"min": a, "max": b} | {VALUE: proportion, ...}}}.')  # fmt: skip


def _plan_prompt(profile: Profile, n: int, dimensions: dict[str, Any]) -> str:
    return (f"Population: {profile.description}\nSampling dimensions: {json.dumps(dimensions)}\n\n"
            f"Write a sampling plan for exactly <n>{n}</n> people: between 10 and 50 sub-populations (fewer when "
            "N is small) of at most 5 people each, each with a short description, concrete characteristics "
            'taken from the dimensions, and a quantity; the quantities must sum to N. Answer with '
            '{"subpopulations": [{"description": str, "characteristics": {...}, "quantity": int}]}.')  # fmt: skip


def _name_prompt(person: dict[str, Any], taken: list[str]) -> str:
    return (f"<characteristics>{json.dumps(person, sort_keys=True)}</characteristics>\n"
            f"Names already used (do not reuse): {', '.join(taken) or 'none'}.\n"
            'Give this person a realistic full name. Answer with {"name": str}.')  # fmt: skip


def _persona_prompt(profile: Profile, person: dict[str, Any], name: str) -> str:
    return (f"Population: {profile.description}\n<name>{name}</name>\n"
            f"<characteristics>{json.dumps(person, sort_keys=True)}</characteristics>\n"
            "Write this person's full specification as one JSON object with: name, age, gender, nationality, "
            "residence, education, occupation {title, organization, description}, personality {traits: [...], "
            "big_five: {openness, conscientiousness, extraversion, agreeableness, neuroticism}}, style, beliefs "
            "[...], preferences {likes: [...], dislikes: [...]}, behaviours [...], skills [...], relationships "
            "[{name, description}]. Make it specific and consistent with the characteristics.")  # fmt: skip


def parse_json_object(text: str) -> dict[str, Any]:
    """The first JSON object in a reply (a fenced block is fine); raises :class:`JudgeOutputError`."""
    match = re.search(r"\{.*\}", text, re.DOTALL)
    try:
        data = json.loads(match.group(0)) if match else None
    except json.JSONDecodeError as exc:
        raise JudgeOutputError(f"the reply is not valid JSON: {exc}") from None
    if not isinstance(data, dict):
        raise JudgeOutputError("the reply holds no JSON object")
    return data


def fit_quantities(quantities: list[int], n: int) -> list[int]:
    """``quantities`` scaled to sum to ``n`` (largest remainders first; ties by position)."""
    total = sum(max(q, 0) for q in quantities)
    if total == n:
        return quantities
    if total == 0:
        raise JudgeOutputError("the sampling plan has no people in it")
    exact = [max(q, 0) * n / total for q in quantities]
    fitted = [int(x) for x in exact]
    order = sorted(range(len(exact)), key=lambda i: (-(exact[i] - fitted[i]), i))
    for i in order[: n - sum(fitted)]:
        fitted[i] += 1
    return fitted


def flatten(plan: dict[str, Any], n: int, seed: int) -> list[dict[str, Any]]:
    """Stage 3: one characteristics record per person, shuffled with ``seed``."""
    subs = plan.get("subpopulations")
    if not isinstance(subs, list) or not subs or not all(isinstance(s, dict) for s in subs):
        raise JudgeOutputError("the sampling plan needs a non-empty 'subpopulations' list of objects")
    quantities = fit_quantities([int(s.get("quantity", 0) or 0) for s in subs], n)
    people = [{"subpopulation": s.get("description", ""), **dict(s.get("characteristics") or {})}
              for s, q in zip(subs, quantities, strict=True) for _ in range(q)]  # fmt: skip
    random.Random(seed).shuffle(people)
    return people


@dataclass
class Factory:
    """Generates ``n`` personas of ``profile`` into ``out`` with ``model``."""

    model: TextModel
    profile: Profile
    n: int
    seed: int
    out: Path
    concurrency: int = 8
    calls: int = 0
    usage: TokenUsage = field(default_factory=TokenUsage)
    on_progress: Callable[[str], None] = lambda _message: None

    @staticmethod
    def planned_calls(n: int) -> int:
        return 2 + 2 * n

    @staticmethod
    def token_bound(n: int) -> int:
        """An upper bound of the tokens (prompt estimates + max output) of a run from scratch, repairs included."""
        stage = {k: PROMPT_TOKENS[k] + STAGE_MAX_TOKENS[k] for k in STAGE_MAX_TOKENS}
        names_listed = 8 * n * n // 2  # each name call lists the names before it (~8 tokens each)
        return 2 * (stage["dimensions"] + stage["plan"] + n * (stage["name"] + stage["persona"]) + names_listed)

    async def _ask(self, stage: str, prompt: str) -> dict[str, Any]:
        turns = [ChatMessage("user", prompt)]
        for _ in range(2):  # the answer, and one repair turn
            request = CompletionRequest(tuple(turns), system=_SYSTEM, temperature=0.7,
                                        max_tokens=STAGE_MAX_TOKENS[stage], purpose=f"population:{stage}")  # fmt: skip
            completion = await self.model.complete(request)
            self.calls += 1
            self.usage = self.usage + completion.usage
            try:
                return parse_json_object(completion.text)
            except JudgeOutputError as error:
                turns += [
                    ChatMessage("assistant", completion.text),
                    ChatMessage("user", f"{error}. Answer again, JSON only."),
                ]
        raise JudgeOutputError(f"{self.model.name}: no usable {stage} answer after one repair turn")

    async def _stage(self, name: str, compute: Callable[[], Any]) -> Any:
        path = self.out / "stages" / f"{name}.json"
        if path.is_file():
            return json.loads(path.read_text(encoding="utf-8"))
        value = await compute()
        _write_json(path, value)
        self.on_progress(f"stage {name} written")
        return value

    def _check_manifest(self) -> None:
        manifest = {"profile": self.profile.name, "n": self.n, "seed": self.seed}
        path = self.out / "population.json"
        if path.is_file():
            found = json.loads(path.read_text(encoding="utf-8"))
            if {k: found.get(k) for k in manifest} != manifest:
                raise ConfigurationError(f"{self.out} holds another population ({found}); choose an empty --out")
        _write_json(path, {**manifest, "model": self.model.name})

    async def run(self) -> list[Persona]:
        self._check_manifest()
        copy_fragments(self.out)
        dims = await self._stage(
            "1-dimensions", lambda: self._ask("dimensions", _dimensions_prompt(self.profile, self.n))
        )
        plan = await self._stage(
            "2-plan", lambda: self._ask("plan", _plan_prompt(self.profile, self.n, dims.get("dimensions", dims)))
        )
        people = await self._stage("3-people", lambda: _async(flatten(plan, self.n, self.seed)))
        names = await self._names(people)
        slots = asyncio.Semaphore(self.concurrency)

        async def one(index: int) -> Persona:
            async with slots:
                return await self._persona(index, people[index], names[index])

        return list(await asyncio.gather(*(one(i) for i in range(len(people)))))

    async def _names(self, people: list[dict[str, Any]]) -> list[str]:
        """Stage 4a: names, one call each, in order (each call sees the names before it)."""
        names: list[str] = []
        for index, person in enumerate(people):
            path = self.out / "stages" / "names" / f"{_pid(index)}.json"
            if path.is_file():
                names.append(json.loads(path.read_text(encoding="utf-8"))["name"])
                continue
            name = str((await self._ask("name", _name_prompt(person, names))).get("name") or f"Person {index + 1}")
            name = name if name not in names else f"{name} ({index + 1})"
            _write_json(path, {"name": name})
            names.append(name)
        return names

    async def _persona(self, index: int, person: dict[str, Any], name: str) -> Persona:
        path = self.out / "personas" / f"{_pid(index)}.json"
        if path.is_file():
            return Persona.model_validate_json(path.read_text(encoding="utf-8"))
        spec = await self._ask("persona", _persona_prompt(self.profile, person, name))
        spec = {**{k: v for k, v in spec.items() if k != "id"}, "id": _pid(index), "name": name}
        try:
            persona = Persona.model_validate(spec)
        except ValidationError as exc:  # keep the person, drop the fields the model got wrong
            bad = {str(e["loc"][0]) for e in exc.errors() if e["loc"]}
            self.on_progress(f"{_pid(index)}: dropped malformed field(s) {', '.join(sorted(bad))}")
            persona = Persona.model_validate({k: v for k, v in spec.items() if k not in bad})
        _write_json(path, persona.spec())
        self.on_progress(f"{persona.id} {name}")
        return persona


def copy_fragments(out: Path) -> list[Path]:
    """The bundled persona fragments (``difficult``, …) copied into ``out/fragments/`` (a file already there is
    kept: it may have been edited), so a generated population runs every bundled scenario, whichever
    fragments it merges onto its personas."""
    written = []
    for fragment in sorted((BUNDLED_TINY / FRAGMENTS_FOLDER).glob("*.yaml")):
        target = out / FRAGMENTS_FOLDER / fragment.name
        if not target.exists():
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(fragment, target)
            written.append(target)
    return written


def _pid(index: int) -> str:
    return f"p{index + 1:03d}"


async def _async(value: Any) -> Any:
    return value


def _write_json(path: Path, value: Any) -> None:
    """Write atomically (a temp file renamed), so a kill never leaves half a stage behind."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(value, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    tmp.replace(path)
