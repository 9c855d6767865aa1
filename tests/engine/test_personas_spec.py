"""TinyTroupe-style persona specs: nested free-form fields, fragments merged onto a base, JSON files."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from engine.errors import PropositionFileError
from engine.models import Persona
from engine.personas import load_population, merge_spec

RICH = """\
    id: lena
    name: Lena Ortiz
    age: 41
    nationality: Chilean
    occupation:
      title: Hospital pharmacist
      description: Checks every prescription twice and keeps the night shift's stock.
    personality:
      traits: [methodical, dry humour]
      big_five: {openness: medium, conscientiousness: very high, agreeableness: medium}
    beliefs: [Medicine should be affordable.]
    preferences: {likes: [crosswords], dislikes: [small talk]}
    relationships:
      - name: Tomás
        description: her brother, a fisherman
    long_term_goals: [Open a community pharmacy.]
    """

DIFFICULT = """\
    personality:
      traits: [impatient, contrarian]
      big_five: {agreeableness: very low}
    behaviours: [Interrupts to point out flaws.]
    """


def write_population(root: Path, persona: str = RICH, fragment: str | None = DIFFICULT) -> Path:
    (root / "personas").mkdir(parents=True)
    (root / "personas" / "lena.yaml").write_text(textwrap.dedent(persona), encoding="utf-8")
    if fragment is not None:
        (root / "fragments").mkdir()
        (root / "fragments" / "difficult.yaml").write_text(textwrap.dedent(fragment), encoding="utf-8")
    return root


def test_merge_spec_deep_merges_mappings_extends_lists_and_replaces_scalars() -> None:
    base = {"age": 30, "personality": {"traits": ["kind"], "big_five": {"openness": "high"}}, "skills": ["a"]}
    fragment = {"age": 31, "personality": {"traits": ["kind", "blunt"], "big_five": {"agreeableness": "low"}}}
    merged = merge_spec(base, fragment)
    assert merged == {
        "age": 31,
        "personality": {"traits": ["kind", "blunt"], "big_five": {"openness": "high", "agreeableness": "low"}},
        "skills": ["a"],
    }
    assert base["personality"] == {"traits": ["kind"], "big_five": {"openness": "high"}}  # inputs untouched


def test_rich_persona_renders_the_whole_spec_for_the_judge(tmp_path: Path) -> None:
    persona = load_population(write_population(tmp_path, fragment=None))["lena"]
    text = persona.render()
    for expected in ("Name: Lena Ortiz", "Age: 41", "Nationality: Chilean", "title: Hospital pharmacist",
                     "conscientiousness: very high", "dislikes:", "name: Tomás", "Long term goals:",
                     "- Open a community pharmacy."):  # fmt: skip
        assert expected in text, expected
    assert text.index("Age:") < text.index("Occupation:") < text.index("Personality:") < text.index("Long term")


def test_fragment_is_merged_onto_every_persona_of_a_population(tmp_path: Path) -> None:
    persona = load_population(write_population(tmp_path), fragments=["difficult"])["lena"]
    spec = persona.spec()
    assert spec["personality"]["traits"] == ["methodical", "dry humour", "impatient", "contrarian"]
    assert spec["personality"]["big_five"]["agreeableness"] == "very low"
    assert spec["personality"]["big_five"]["conscientiousness"] == "very high"
    assert spec["behaviours"] == ["Interrupts to point out flaws."]
    assert "contrarian" in persona.render()


def test_a_persona_file_names_its_own_fragments(tmp_path: Path) -> None:
    persona = load_population(write_population(tmp_path, RICH.rstrip(" ") + "    fragments: [difficult]\n"))["lena"]
    assert "impatient" in persona.spec()["personality"]["traits"]


def test_missing_fragment_and_typo_are_located(tmp_path: Path) -> None:
    text = RICH.replace("beliefs:", "belifs:").rstrip(" ") + "    fragments: [nope]\n"
    with pytest.raises(PropositionFileError) as caught:
        load_population(write_population(tmp_path, text, fragment=None))
    found = {(i.line, i.path, i.message.split(";")[0]) for i in caught.value.issues}
    assert (11, "belifs", "unknown key 'belifs'") in found
    assert any(path == "fragments" and "no fragment 'nope'" in msg for _, path, msg in found)


def test_json_persona_files_are_read(tmp_path: Path) -> None:
    (tmp_path / "personas").mkdir()
    spec = {"id": "p1", "name": "Ada", "age": 70, "personality": {"big_five": {"openness": "high"}}}
    (tmp_path / "personas" / "p1.json").write_text(json.dumps(spec), encoding="utf-8")
    persona = load_population(tmp_path)["p1"]
    assert persona == Persona.model_validate(spec) and persona.spec() == spec


def test_fragments_and_profiles_are_file_kinds_for_drift_validate(tmp_path: Path) -> None:
    from engine.formats.registry import validate_path

    good = tmp_path / "difficult.yaml"
    good.write_text(textwrap.dedent(DIFFICULT), encoding="utf-8")
    assert validate_path(good).kind is not None and validate_path(good).ok
    bad = tmp_path / "old.yaml"
    bad.write_text("age: old\nbeliefs: [x]\n", encoding="utf-8")
    checked = validate_path(bad)
    assert checked.kind is not None and checked.kind.name == "persona-fragment"
    assert [(i.line, i.path) for i in checked.issues] == [(1, "age")]
    profile = tmp_path / "p.yaml"
    profile.write_text("name: p\ndescription: d\nrequirement: r\n", encoding="utf-8")
    issues = validate_path(profile).issues
    assert [(i.line, i.path) for i in issues] == [(3, "requirement")] and "did you mean 'requirements'" in issues[
        0
    ].message
