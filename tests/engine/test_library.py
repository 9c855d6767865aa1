"""PropositionLibrary: start-up validation and per-process caching of proposition sets and personas."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from engine.errors import PropositionFileError
from engine.library import PropositionLibrary
from engine.models import Dimension

TreeFactory = Callable[..., Path]

DEFAULT_ADHERENCE = """\
dimension: adherence
propositions:
  - id: adherence-in-character
    claim: "{{agent_name}} stays in character"
"""

MICHAEL_ADHERENCE = """\
dimension: adherence
agent_id: michael
hard: true
propositions:
  - id: michael-self-centred
    claim: "{{agent_name}} talks about himself"
    weight: 0.5
"""

MICHAEL_PERSONA = """\
id: michael
name: Michael Scott
personality: Needy and loud.
"""


@pytest.fixture
def make_tree(tmp_path: Path) -> TreeFactory:
    """make_tree({relative path: text}): a propositions directory with those files (defaults: a small tree)."""

    def make(files: dict[str, str] | None = None) -> Path:
        root = tmp_path / "propositions"
        chosen = files or {
            "adherence/_default.yaml": DEFAULT_ADHERENCE,
            "adherence/michael.yaml": MICHAEL_ADHERENCE,
            "personas/michael.yaml": MICHAEL_PERSONA,
        }
        for relative, text in chosen.items():
            path = root / relative
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
        return root

    return make


def test_a_valid_tree_validates(make_tree: TreeFactory) -> None:
    PropositionLibrary(make_tree()).validate()


def test_validation_reports_file_and_line(make_tree: TreeFactory) -> None:
    bad = DEFAULT_ADHERENCE + "    weight: -1\n"
    library = PropositionLibrary(make_tree({"adherence/_default.yaml": bad}))
    with pytest.raises(PropositionFileError) as caught:
        library.validate()
    issue = caught.value.issues[0]
    assert issue.file.endswith("_default.yaml") and issue.line == 5
    assert "weight" in issue.path


def test_pset_merges_defaults_and_agent_file(make_tree: TreeFactory) -> None:
    library = PropositionLibrary(make_tree())
    michael = library.pset("michael", Dimension.ADHERENCE)
    assert [p.id for p in michael.propositions] == ["adherence-in-character", "michael-self-centred"]
    assert michael.hard
    defaults = library.pset(None, Dimension.ADHERENCE)
    assert [p.id for p in defaults.propositions] == ["adherence-in-character"] and not defaults.hard
    assert library.pset("jim", Dimension.ADHERENCE) == defaults.model_copy(update={"agent_id": "jim"})
    assert library.pset("michael", Dimension.FLUENCY).is_empty


def test_sets_are_loaded_once(make_tree: TreeFactory) -> None:
    root = make_tree()
    library = PropositionLibrary(root)
    first = library.pset("michael", Dimension.ADHERENCE)
    (root / "adherence" / "michael.yaml").write_text("not: [valid", encoding="utf-8")
    assert library.pset("michael", Dimension.ADHERENCE) is first
    with pytest.raises(PropositionFileError):  # a fresh library reads the broken file
        PropositionLibrary(root).pset("michael", Dimension.ADHERENCE)


def test_a_default_file_is_parsed_once_for_every_agent(make_tree: TreeFactory) -> None:
    root = make_tree()
    library = PropositionLibrary(root)
    library.pset("michael", Dimension.ADHERENCE)
    (root / "adherence" / "_default.yaml").write_text("not: [valid", encoding="utf-8")
    jim = library.pset("jim", Dimension.ADHERENCE)  # a new agent, the default file already parsed
    assert [p.id for p in jim.propositions] == ["adherence-in-character"] and jim.agent_id == "jim"
    with pytest.raises(PropositionFileError):
        PropositionLibrary(root).pset("jim", Dimension.ADHERENCE)


def test_psets_maps_each_requested_dimension(make_tree: TreeFactory) -> None:
    library = PropositionLibrary(make_tree())
    dims = (Dimension.ADHERENCE, Dimension.CONSISTENCY)
    psets = library.psets("michael", dims)
    assert tuple(psets) == dims
    assert psets[Dimension.ADHERENCE] is library.pset("michael", Dimension.ADHERENCE)


def test_personas_are_loaded_once_and_missing_ones_are_none(make_tree: TreeFactory) -> None:
    root = make_tree()
    library = PropositionLibrary(root)
    michael = library.persona("michael")
    assert michael is not None and michael.name == "Michael Scott"
    assert library.persona("jim") is None
    (root / "personas" / "jim.yaml").write_text("id: jim\nname: Jim Halpert\n", encoding="utf-8")
    assert library.persona("jim") is None  # the absence is cached too
    assert library.persona("michael") is michael


def test_an_invalid_agent_id_is_a_file_error(make_tree: TreeFactory) -> None:
    library = PropositionLibrary(make_tree())
    with pytest.raises(PropositionFileError, match="agent id"):
        library.pset("../etc", Dimension.ADHERENCE)
    with pytest.raises(PropositionFileError, match="agent id"):
        library.persona("../etc")


def test_a_missing_directory_is_a_file_error(tmp_path: Path) -> None:
    library = PropositionLibrary(tmp_path / "absent")
    with pytest.raises(PropositionFileError, match="no such propositions directory"):
        library.pset(None, Dimension.ADHERENCE)
