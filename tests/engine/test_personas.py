"""Persona files: loading, id/stem agreement and FILE:LINE issues."""

from __future__ import annotations

import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest

from engine.errors import PropositionFileError
from engine.personas import load_persona, load_personas, persona_path

Write = Callable[[str, str], Path]

ANGELA = """\
    id: angela
    name: Angela Martin
    personality: Prim and controlling.
    style: Clipped sentences.
    beliefs:
      - Rules matter.
    behaviours:
      - Judges coworkers.
      - Mentions her cats.
    skills:
      - Bookkeeping.
    """


@pytest.fixture
def write(tmp_path: Path) -> Write:
    def _write(agent_id: str, text: str) -> Path:
        path = persona_path(tmp_path, agent_id)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text), encoding="utf-8")
        return path

    return _write


def test_load_persona_reads_every_field(write: Write, tmp_path: Path) -> None:
    write("angela", ANGELA)
    persona = load_persona(tmp_path, "angela")
    assert persona is not None
    assert (persona.id, persona.name) == ("angela", "Angela Martin")
    assert persona.behaviours == ("Judges coworkers.", "Mentions her cats.")
    rendered = persona.render()
    assert "Name: Angela Martin" in rendered and "- Mentions her cats." in rendered


def test_missing_persona_is_none(tmp_path: Path) -> None:
    assert load_persona(tmp_path, "toby") is None


def test_optional_fields_default_to_empty(write: Write, tmp_path: Path) -> None:
    write("creed", "id: creed\nname: Creed Bratton\n")
    persona = load_persona(tmp_path, "creed")
    assert persona is not None and persona.beliefs == () and persona.style == ""


def test_load_personas_maps_ids(write: Write, tmp_path: Path) -> None:
    write("angela", ANGELA)
    write("creed", "id: creed\nname: Creed Bratton\n")
    assert sorted(load_personas(tmp_path)) == ["angela", "creed"]
    assert load_personas(tmp_path / "personas") == {}  # no personas/ folder below it


def test_id_must_equal_the_file_stem(write: Write, tmp_path: Path) -> None:
    path = write("kevin", "name: Kevin Malone\nid: kev\n")
    with pytest.raises(PropositionFileError) as caught:
        load_persona(tmp_path, "kevin")
    (issue,) = caught.value.issues
    assert (issue.file, issue.line, issue.path) == (str(path), 2, "id")
    assert issue.message == "is 'kev' but the file is kevin.yaml"


def test_unknown_key_suggests_the_closest(write: Write, tmp_path: Path) -> None:
    write("angela", ANGELA.replace("behaviours:", "behaviors:"))
    with pytest.raises(PropositionFileError) as caught:
        load_persona(tmp_path, "angela")
    (issue,) = caught.value.issues
    assert (issue.line, issue.path) == (7, "behaviors")
    assert issue.message == "unknown key 'behaviors'; did you mean 'behaviours'?"


def test_wrong_types_and_missing_name(write: Write, tmp_path: Path) -> None:
    write("oscar", "id: oscar\nbeliefs: Data matters.\nskills:\n  - 42\n")
    with pytest.raises(PropositionFileError) as caught:
        load_persona(tmp_path, "oscar")
    found = {(i.line, i.path) for i in caught.value.issues}
    assert found == {(1, "name"), (2, "beliefs"), (4, "skills.0")}


def test_load_personas_reports_every_bad_file(write: Write, tmp_path: Path) -> None:
    write("angela", ANGELA)
    write("jim", "id: jim\n")
    write("pam", "- not a mapping\n")
    with pytest.raises(PropositionFileError) as caught:
        load_personas(tmp_path)
    assert sorted(Path(i.file).stem for i in caught.value.issues) == ["jim", "pam"]


def test_bad_agent_id_never_reads_outside_the_folder(tmp_path: Path) -> None:
    with pytest.raises(PropositionFileError, match="not a valid agent id"):
        load_persona(tmp_path, "../secrets")
