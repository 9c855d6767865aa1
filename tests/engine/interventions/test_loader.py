"""Intervention files: validation with FILE:LINE issues, references to propositions, build and evaluation."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from textwrap import dedent

import pytest

from engine.errors import PropositionFileError
from engine.interventions import (
    InlineProposition,
    InterventionSpec,
    Scope,
    build,
    build_all,
    load_intervention_files,
    load_interventions,
)
from engine.propositions import Proposition
from engine.settings import BUNDLED_PROPOSITIONS

from .conftest import MakeContext, MakeJudge

WriteFile = Callable[[str, str], Path]

ADHERENCE_DEFAULT = """\
dimension: adherence
propositions:
  - id: adherence-generic-assistant
    claim: "{{agent_name}} sounds like a neutral assistant"
    inverted: true
"""
ADHERENCE_MICHAEL = """\
dimension: adherence
agent_id: michael
propositions:
  - id: michael-tells-stories
    claim: "{{agent_name}} tells stories about himself"
"""
VALID = """\
interventions:
  - name: generic-voice
    targets: all
    preconditions:
      functional:
        min_messages: 3
      textual: "{{agent_name}} sounds flat"
      propositional:
        dimension: adherence
        proposition: adherence-generic-assistant
        threshold: 5
    effect:
      default: "{{agent_name}}, be yourself."
      michael: "{{agent_name}}, tell a story."
  - name: team-check
    targets: [michael, jim]
    group: true
    concurrent: true
    first_n: 2
    last_n: 3
    preconditions:
      textual: {claim: "the team agrees too fast", scope: channel, include_persona: true}
      propositional: {claim: "{{agent_name}} disagree", id: disagree, inverted: true}
    effect: "{{agent_name}}, push back."
"""


@pytest.fixture
def root(tmp_path: Path) -> Path:
    (tmp_path / "adherence").mkdir()
    (tmp_path / "adherence" / "_default.yaml").write_text(ADHERENCE_DEFAULT)
    (tmp_path / "adherence" / "michael.yaml").write_text(ADHERENCE_MICHAEL)
    (tmp_path / "interventions").mkdir()
    return tmp_path


@pytest.fixture
def write(root: Path) -> WriteFile:
    def make(name: str, text: str) -> Path:
        path = root / "interventions" / name
        path.write_text(dedent(text))
        return path

    return make


def issues_of(root: Path) -> list[str]:
    with pytest.raises(PropositionFileError) as caught:
        load_interventions(root / "interventions")
    return [str(issue) for issue in caught.value.issues]


def test_valid_file_loads_into_specs(root: Path, write: WriteFile) -> None:
    path = write("team.yaml", VALID)

    first, second = load_interventions(root / "interventions")

    assert (first.name, first.targets, first.line, first.file) == ("generic-voice", None, 2, str(path))
    assert first.functional == (("min_messages", 3),)
    assert first.textual is not None and first.textual.scope is Scope.AGENT
    assert not first.textual.include_persona  # TinyTroupe's default: no persona
    assert second.textual is not None and second.textual.include_persona
    assert first.propositional is not None and first.propositional.threshold == 5
    assert first.propositional.proposition_id == "adherence-generic-assistant"
    assert first.effect.template_for("michael") == "{{agent_name}}, tell a story."
    assert first.effect.template_for("pam") == "{{agent_name}}, be yourself."
    assert second.targets == ("michael", "jim") and second.group and second.concurrent
    assert (second.window.first_n, second.window.last_n) == (2, 3)
    assert second.propositional is not None
    assert second.propositional.inline == InlineProposition("disagree", "{{agent_name}} disagree", inverted=True)


def test_build_fans_out_per_agent_or_groups(root: Path, write: WriteFile) -> None:
    write("team.yaml", VALID)
    per_agent, group = load_interventions(root / "interventions")

    built = build(per_agent, ["michael", "jim", "pam"])
    grouped = build(group, ["jim", "pam", "dwight"])

    assert [i.targets for i in built] == [("michael",), ("jim",), ("pam",)]
    proposition = built[0].propositional
    assert proposition is not None and isinstance(proposition.proposition, Proposition)
    assert proposition.proposition.inverted and proposition.threshold == 5
    assert [i.targets for i in grouped] == [("jim",)]  # michael is not in this run
    assert grouped[0].concurrent and grouped[0].propositional is not None
    assert build(replace(per_agent, enabled=False), ["michael"]) == []
    assert len(build_all([per_agent, group], ["michael", "jim"])) == 3


def test_unknown_key_has_exact_line_and_did_you_mean(root: Path, write: WriteFile) -> None:
    path = write(
        "typo.yaml",
        """\
        interventions:
          - name: nudge
            targets: all
            effcet: "hi"
        """,
    )

    assert issues_of(root) == [
        f"{path}:2: interventions.0.effect: required key is missing",
        f"{path}:4: interventions.0.effcet: unknown key 'effcet'; did you mean 'effect'?",
    ]


def test_unknown_functional_precondition_is_an_error_with_suggestion(root: Path, write: WriteFile) -> None:
    path = write(
        "functional.yaml",
        """\
        interventions:
          - name: nudge
            targets: [jim]
            preconditions:
              functional:
                channel_min_messages: 3
                min_mesages: 7
                every_n_steps: 0
            effect: "go"
        """,
    )

    assert issues_of(root) == [
        f"{path}:7: interventions.0.preconditions.functional.min_mesages: "
        "unknown functional precondition 'min_mesages'; did you mean 'min_messages'?",
        f"{path}:8: interventions.0.preconditions.functional.every_n_steps: every_n_steps must be at least 1",
    ]


def test_unknown_proposition_reference_is_located(root: Path, write: WriteFile) -> None:
    path = write(
        "reference.yaml",
        """\
        interventions:
          - name: nudge
            targets: all
            preconditions:
              propositional:
                dimension: adherence
                proposition: michael-tells-storys
            effect: "go"
        """,
    )

    assert issues_of(root) == [
        f"{path}:7: interventions.0.preconditions.propositional.proposition: "
        "unknown adherence proposition 'michael-tells-storys'; did you mean 'michael-tells-stories'?"
    ]


def test_schema_rules_give_one_issue_each(root: Path, write: WriteFile) -> None:
    path = write(
        "rules.yaml",
        """\
        interventions:
          - name: one
            targets: [all, jim]
            effect: {michael: "only a variant"}
          - name: two
            targets: jim
            preconditions:
              propositional: {dimension: fluency, claim: "both given"}
              textual: {claim: "x", scope: everywhere}
            effect: "{{agent_nmae}}, go"
          - name: three
            targets: jim
            preconditions:
              propositional: {claim: "c", threshold: 12}
            effect: "go"
        """,
    )

    issues = issues_of(root)

    assert f"{path}:3: interventions.0.targets: 'all' cannot be combined with agent ids" in issues
    assert any(i.startswith(f"{path}:4: interventions.0.effect: needs a non-empty 'default'") for i in issues)
    assert any(i.startswith(f"{path}:8: interventions.1.preconditions.propositional: give either") for i in issues)
    assert any(i.startswith(f"{path}:9: interventions.1.preconditions.textual.scope: input should be") for i in issues)
    assert f"{path}:14: interventions.2.preconditions.propositional: threshold 12 is above the 0-9 scale" in issues
    assert len(issues) == 5  # the template typo is reported once the schema errors are fixed


def test_template_variables_and_names_are_checked_across_files(root: Path, write: WriteFile) -> None:
    first = write("a.yaml", 'interventions:\n  - name: nudge\n    targets: all\n    effect: "go"\n')
    second = write(
        "b.yaml",
        """\
        interventions:
          - name: variety
            targets: all
            effect: "go"
          - name: nudge
            targets: all
            effect:
              default: "{{agent_name}} go"
              jim: "{{agent_nmae}} go"
        """,
    )

    assert issues_of(root) == [
        f"{second}:2: interventions.0.name: 'variety' is a built-in directive kind; pick another",
        f"{second}:5: interventions.1.name: duplicate intervention name (first defined at {first}:2)",
        f"{second}:9: interventions.1.effect.jim: unknown template variable '{{{{agent_nmae}}}}'; "
        "did you mean 'agent_name'?",
    ]


def test_yaml_syntax_errors_and_missing_directory(root: Path, write: WriteFile, tmp_path: Path) -> None:
    path = write("broken.yaml", "interventions:\n  - name: x\n    targets: [jim\n")

    (issue,) = issues_of(root)

    assert issue.startswith(f"{path}:") and "YAML syntax error" in issue
    with pytest.raises(PropositionFileError, match="no such interventions directory"):
        load_interventions(tmp_path / "missing")


def test_build_rejects_a_proposition_missing_for_an_agent(root: Path, write: WriteFile) -> None:
    path = write(
        "michael.yaml",
        """\
        interventions:
          - name: stories
            targets: all
            preconditions:
              propositional:
                dimension: adherence
                proposition: michael-tells-stories
                threshold: 4
            effect: "go"
        """,
    )
    (spec,) = load_interventions(root / "interventions")

    assert len(build(spec, ["michael"])) == 1
    with pytest.raises(PropositionFileError) as caught:
        build(spec, ["michael", "jim"])
    assert str(caught.value) == (
        f"{path}:5: interventions.0.preconditions.propositional: "
        "proposition 'michael-tells-stories' is not in the adherence set of agent 'jim'"
    )


async def test_built_intervention_evaluates_with_character_aware_variants(
    root: Path, write: WriteFile, make_judge: MakeJudge, make_context: MakeContext
) -> None:
    write("team.yaml", VALID)
    spec = load_interventions(root / "interventions")[0]
    judge = make_judge({"proposition": "adherence-generic-assistant", "value": 8})  # 9 - 8 = 1 < 5
    context = make_context(("michael", "pam"), messages={"michael": 3, "pam": 3})

    outcomes = [await i.evaluate(judge, context) for i in build(spec, ["michael", "pam"])]

    assert [o.text for o in outcomes] == ["Michael Scott, tell a story.", "Pam Beesly, be yourself."]
    assert judge.log.count() == 4  # a textual check and a score for each agent


def test_bundled_examples_load_and_build() -> None:
    specs = load_interventions(BUNDLED_PROPOSITIONS / "interventions")

    assert specs and all(not spec.enabled for spec in specs)  # shipped disabled: no judge cost
    enabled = [replace(spec, enabled=True) for spec in specs]
    built = build_all(enabled, ["michael", "dwight", "jim", "pam"])
    assert {i.name for i in built} == {spec.name for spec in specs}
    assert all(len(spec.effect.variants) >= 2 for spec in specs)


def test_files_load_in_the_given_order(root: Path, write: WriteFile) -> None:
    b = write("b.yaml", 'interventions:\n  - name: bee\n    targets: all\n    effect: "go"\n')
    a = write("a.yaml", 'interventions:\n  - name: ay\n    targets: all\n    effect: "go"\n')

    in_order: tuple[InterventionSpec, ...] = load_intervention_files([b, a], root)

    assert [s.name for s in in_order] == ["bee", "ay"]
    assert [s.name for s in load_interventions(root / "interventions")] == ["ay", "bee"]
    assert in_order[0].file == str(b)
