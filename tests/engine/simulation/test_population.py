"""The population factory with the scripted model: 2 + 2N calls, determinism under a seed, resume after a
kill, a plan that misses N, a foreign output folder."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from engine.errors import ConfigurationError
from engine.llm.base import Completion, CompletionRequest
from engine.personas import load_population
from engine.simulation.population import Factory, fit_quantities, flatten
from engine.simulation.profiles import load_profile
from engine.simulation.scripted_population import ScriptedPopulationModel


class Killed(BaseException):
    """Stands for SIGKILL: not an Exception, nothing catches it."""


class DiesAfter(ScriptedPopulationModel):
    def __init__(self, calls: int) -> None:
        super().__init__()
        self.left = calls

    async def complete(self, request: CompletionRequest) -> Completion:
        if self.left == 0:
            raise Killed
        self.left -= 1
        return await super().complete(request)


def _factory(out: Path, n: int = 6, seed: int = 7, model: ScriptedPopulationModel | None = None) -> Factory:
    return Factory(model or ScriptedPopulationModel(), load_profile("average-customers"), n, seed, out, concurrency=3)


def _files(out: Path) -> dict[str, str]:
    return {p.name: p.read_text() for p in sorted((out / "personas").glob("*.json"))}


async def test_calls_are_2_plus_2n_and_every_persona_is_written(tmp_path: Path) -> None:
    factory = _factory(tmp_path)
    personas = await factory.run()
    assert factory.calls == Factory.planned_calls(6) == 14
    purposes = [r.purpose for r in factory.model.requests]  # type: ignore[attr-defined]
    assert purposes.count("population:name") == purposes.count("population:persona") == 6
    loaded = load_population(tmp_path)
    assert sorted(loaded) == [p.id for p in personas] == [f"p{i:03d}" for i in range(1, 7)]
    assert len({p.name for p in personas}) == 6  # names never repeat
    assert all(p.age is not None and "big_five" in p.render() for p in personas)
    assert json.loads((tmp_path / "population.json").read_text())["model"] == "scripted:population"
    assert factory.token_bound(6) > factory.usage.input_tokens + factory.usage.output_tokens


async def test_same_seed_same_population_other_seed_other_order(tmp_path: Path) -> None:
    await _factory(tmp_path / "a").run()
    await _factory(tmp_path / "b").run()
    await _factory(tmp_path / "c", seed=8).run()
    assert _files(tmp_path / "a") == _files(tmp_path / "b")
    people = [json.loads((tmp_path / d / "stages" / "3-people.json").read_text()) for d in ("a", "c")]
    assert sorted(map(json.dumps, people[0])) == sorted(map(json.dumps, people[1])) and people[0] != people[1]


async def test_a_rerun_after_a_kill_resumes_without_paying_again(tmp_path: Path) -> None:
    with pytest.raises(Killed):
        await _factory(tmp_path, model=DiesAfter(2 + 6 + 2)).run()  # dimensions, plan, names, two personas
    assert len(_files(tmp_path)) == 2
    resumed = _factory(tmp_path)
    await resumed.run()
    assert resumed.calls == 4  # only the four missing personas
    assert {r.purpose for r in resumed.model.requests} == {"population:persona"}  # type: ignore[attr-defined]
    await _factory(tmp_path / "fresh").run()
    assert _files(tmp_path) == _files(tmp_path / "fresh")
    again = _factory(tmp_path)
    await again.run()
    assert again.calls == 0


async def test_another_population_in_the_folder_is_refused(tmp_path: Path) -> None:
    await _factory(tmp_path, n=2).run()
    with pytest.raises(ConfigurationError, match="another population"):
        await _factory(tmp_path, n=3).run()


def test_plans_that_miss_n_are_scaled_and_flattened_with_the_seed() -> None:
    assert fit_quantities([1, 1, 1], 3) == [1, 1, 1]
    assert fit_quantities([2, 2, 2], 4) == [2, 1, 1] and sum(fit_quantities([5, 3, 1], 20)) == 20
    plan = {"subpopulations": [{"description": "a", "characteristics": {"x": 1}, "quantity": 3},
                               {"description": "b", "characteristics": {"x": 2}, "quantity": 1}]}  # fmt: skip
    people = flatten(plan, 8, seed=1)
    assert [p["x"] for p in people].count(1) == 6 and people == flatten(plan, 8, seed=1)


def test_the_bundled_tiny_population_has_twelve_rich_personas() -> None:
    from engine.simulation.population import BUNDLED_TINY

    personas = load_population(BUNDLED_TINY, fragments=["difficult"])
    assert len(personas) == 12
    assert all(
        "big_five" in p.render() and "Refuses to agree just to be polite." in p.render() for p in personas.values()
    )
