"""Loading and merging proposition files: every key with its default, and how agent files override defaults."""

from __future__ import annotations

from pathlib import Path

from engine.models import Dimension, TargetType
from engine.propositions import (
    ACTION_LEVEL_WINDOW_DEFAULTS,
    EVALUATION_WINDOW_DEFAULTS,
    PropositionFile,
    Window,
    list_agents,
    list_dimensions,
    load_file,
    load_set,
)
from tests.conftest import Write
from tests.engine.propositions.conftest import DEFAULT_ADHERENCE

# --- happy path and merge semantics -------------------------------------------------------------------------


def test_load_file_reads_every_key_and_applies_defaults(write: Write) -> None:
    path = write(
        "f.yaml",
        """\
        dimension: fluency
        propositions:
          - id: p1
            claim: varied
          - id: p2
            claim: repeats
            weight: 2
            inverted: true
            double_check: true
            recommendations_for_improvement: vary it
            precondition: has_prior_actions
        """,
    )
    loaded = load_file(path)
    assert isinstance(loaded, PropositionFile)
    assert (loaded.include_personas, loaded.hard, loaded.target_type) == (True, False, TargetType.AGENT)
    assert loaded.first_n is None and loaded.last_n is None
    first, second = loaded.propositions
    assert (first.weight, first.inverted, first.double_check, first.precondition) == (1.0, False, False, None)
    assert second.weight == 2.0 and isinstance(second.weight, float)
    assert (second.inverted, second.double_check) == (True, True)
    assert second.recommendations_for_improvement == "vary it"
    assert second.precondition == "has_prior_actions"


def test_agent_settings_override_only_what_they_set(write: Write, tmp_path: Path) -> None:
    write("adherence/_default.yaml", DEFAULT_ADHERENCE)
    write(
        "adherence/dwight.yaml",
        """\
        dimension: adherence
        agent_id: dwight
        hard: true
        last_n: 7
        propositions:
          - id: dwight-authority
            claim: "{{agent_name}} asserts authority"
        """,
    )
    merged = load_set(tmp_path, Dimension.ADHERENCE, "dwight")
    assert merged.hard is True  # overridden
    assert merged.first_n == 3  # kept from _default.yaml
    assert merged.last_n == 7  # set only by the agent
    assert merged.include_personas is True
    assert [p.id for p in merged.propositions] == ["base-one", "base-two", "dwight-authority"]
    assert merged.sources == (
        str(tmp_path / "adherence/_default.yaml"),
        str(tmp_path / "adherence/dwight.yaml"),
    )
    assert merged.agent_id == "dwight" and merged.dimension is Dimension.ADHERENCE


def test_agent_can_reset_a_default_setting_explicitly(write: Write, tmp_path: Path) -> None:
    write("adherence/_default.yaml", DEFAULT_ADHERENCE)
    write("adherence/pam.yaml", "dimension: adherence\nfirst_n: null\ninclude_personas: false\n")
    merged = load_set(tmp_path, Dimension.ADHERENCE, "pam")
    assert merged.first_n is None
    assert merged.include_personas is False
    assert merged.window(EVALUATION_WINDOW_DEFAULTS) == EVALUATION_WINDOW_DEFAULTS


def test_agent_without_file_gets_the_defaults(write: Write, tmp_path: Path) -> None:
    write("adherence/_default.yaml", DEFAULT_ADHERENCE)
    merged = load_set(tmp_path, Dimension.ADHERENCE, "creed")
    assert [p.id for p in merged.propositions] == ["base-one", "base-two"]
    assert merged.sources == (str(tmp_path / "adherence/_default.yaml"),)
    assert merged.agent_id == "creed"


def test_agent_file_without_default_uses_setting_defaults(write: Write, tmp_path: Path) -> None:
    write("suitability/jim.yaml", "dimension: suitability\npropositions:\n  - {id: a, claim: fits}\n")
    merged = load_set(tmp_path, Dimension.SUITABILITY, "jim")
    assert [p.id for p in merged.propositions] == ["a"]
    assert (merged.include_personas, merged.hard, merged.target_type) == (True, False, TargetType.AGENT)


def test_no_files_at_all_is_an_empty_set(tmp_path: Path) -> None:
    merged = load_set(tmp_path, Dimension.CONVERGENCE, "michael")
    assert merged.is_empty and merged.sources == ()


def test_defaults_only_when_agent_is_none(write: Write, tmp_path: Path) -> None:
    write("adherence/_default.yaml", DEFAULT_ADHERENCE)
    write("adherence/dwight.yaml", "dimension: adherence\nhard: true\n")
    merged = load_set(tmp_path, Dimension.ADHERENCE, None)
    assert merged.agent_id is None and merged.hard is False


def test_window_fills_only_unset_sizes(write: Write, tmp_path: Path) -> None:
    write("adherence/_default.yaml", DEFAULT_ADHERENCE)
    merged = load_set(tmp_path, Dimension.ADHERENCE, None)
    assert merged.window(EVALUATION_WINDOW_DEFAULTS) == Window(first_n=3, last_n=100)
    assert merged.window(ACTION_LEVEL_WINDOW_DEFAULTS) == Window(first_n=3, last_n=10)


def test_window_keeps_an_explicit_zero(write: Write, tmp_path: Path) -> None:
    write("fluency/_default.yaml", "dimension: fluency\nfirst_n: 0\nlast_n: 0\n")
    merged = load_set(tmp_path, Dimension.FLUENCY, None)
    assert merged.window(EVALUATION_WINDOW_DEFAULTS) == Window(first_n=0, last_n=0)


def test_listing_helpers(write: Write, tmp_path: Path) -> None:
    write("adherence/_default.yaml", DEFAULT_ADHERENCE)
    write("adherence/dwight.yaml", "dimension: adherence\n")
    write("fluency/kevin.yaml", "dimension: fluency\n")
    write("personas/pam.yaml", "id: pam\nname: Pam Beesly\n")
    (tmp_path / "consistency").mkdir()  # empty folder: not listed
    assert list_agents(tmp_path) == ("dwight", "kevin", "pam")
    assert list_dimensions(tmp_path) == (Dimension.ADHERENCE, Dimension.FLUENCY)
