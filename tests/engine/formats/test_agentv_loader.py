"""AgentV loader: aliases and their precedence, shorthand expansion, skipped and rejected cases with their
lines, both dialects, and the corpus of upstream files classified as upstream's own loader did."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from engine.formats.agentv.loader import load_eval_file
from engine.formats.agentv.schema import AgentVEvalFile
from engine.formats.registry import validate_path
from tests.peers import peer, require

CORPUS = peer("corpus", "agentv")


def write(tmp_path: Path, text: str, name: str = "cases.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_canonical_names_win_over_aliases(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "evalcases:\n"
        "  - id: c1\n"
        "    expected_outcome: canonical outcome\n"
        "    outcome: alias outcome\n"
        "    input_messages:\n"
        "      - {role: user, content: canonical input}\n"
        "    input: alias input\n"
        "    expected_messages:\n"
        "      - {role: assistant, content: first}\n"
        "      - {role: assistant, content: canonical answer}\n"
        "    expected_output: alias answer\n",
    )
    loaded, issues = load_eval_file(path)
    assert issues == []
    assert loaded is not None
    case = loaded.cases[0]
    assert case.expected_outcome == "canonical outcome"
    assert case.input_messages == ({"role": "user", "content": "canonical input"},)
    assert case.question == "canonical input"
    assert case.reference_answer == "canonical answer"


def test_shorthands_expand_to_messages(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "eval_cases:\n"
        "  - id: s\n    outcome: o\n    input: What is 2+2?\n    expected_output: The answer is 4\n"
        "  - id: o\n    outcome: o\n    input: Query\n    expected_output: {riskLevel: High, confidence: 0.95}\n",
    )
    loaded, issues = load_eval_file(path)
    assert issues == [] and loaded is not None and loaded.dialect == "seed"
    first, second = loaded.cases
    assert first.input_messages == ({"role": "user", "content": "What is 2+2?"},)
    assert first.expected_messages == ({"role": "assistant", "content": "The answer is 4"},)
    assert second.expected_messages == ({"role": "assistant", "content": {"riskLevel": "High", "confidence": 0.95}},)
    assert second.reference_answer == '{"confidence":0.95,"riskLevel":"High"}'


def test_incomplete_cases_are_reported_with_their_line_and_skipped(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "evalcases:\n"
        "  - id: ok\n    expected_outcome: g\n    input: hi\n"
        "  - id: no-input\n    expected_outcome: g\n"
        "  - expected_outcome: g\n    input: hi\n"
        "  - id: bad-input\n    expected_outcome: g\n    input: 123\n",
    )
    loaded, issues = load_eval_file(path)
    assert loaded is not None and [c.id for c in loaded.cases] == ["ok"]
    assert [(i.line, i.path) for i in issues] == [(5, "evalcases.1"), (7, "evalcases.2"), (9, "evalcases.3")]
    assert "case 'no-input' skipped: missing or invalid input_messages (or input)" in issues[0].message
    assert "missing or invalid id" in issues[1].message
    assert str(issues[2]).startswith(f"{path}:9: evalcases.3: case 'bad-input' skipped")


@pytest.mark.parametrize(
    ("weight", "shown"),
    [("-1", "-1"), (".nan", "nan"), (".inf", "inf"), ("heavy", "'heavy'"), ("true", "True")],
)
def test_a_bad_weight_rejects_the_case_with_a_clear_error(tmp_path: Path, weight: str, shown: str) -> None:
    path = write(
        tmp_path,
        "evalcases:\n  - id: c\n    expected_outcome: g\n    input: hi\n    evaluators:\n"
        f"      - name: j\n        type: llm_judge\n        weight: {weight}\n",
    )
    loaded, issues = load_eval_file(path)
    assert loaded is not None and loaded.cases == ()
    assert [str(i) for i in issues] == [
        f"{path}:8: evalcases.0.evaluators.0.weight: weight must be a finite number >= 0, got {shown}"
    ]


def test_weight_zero_is_accepted_and_default_is_one(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "evalcases:\n  - id: c\n    expected_outcome: g\n    input: hi\n    evaluators:\n"
        "      - {name: a, type: llm_judge, weight: 0}\n      - {name: b, type: llm_judge}\n",
    )
    loaded, issues = load_eval_file(path)
    assert issues == [] and loaded is not None
    assert [(e.name, e.weight) for e in loaded.cases[0].evaluators] == [("a", 0.0), ("b", 1.0)]


def test_an_invalid_trajectory_mode_is_rejected_naming_the_modes(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "evalcases:\n  - id: c\n    expected_outcome: g\n    input: hi\n    execution:\n      evaluators:\n"
        "        - {name: t, type: tool_trajectory, mode: sometimes}\n",
    )
    _, issues = load_eval_file(path)
    assert [str(i) for i in issues] == [
        f"{path}:7: evalcases.0.execution.evaluators.0.mode: invalid mode 'sometimes'; "
        "supported modes: any_order, in_order, exact"
    ]


def test_unknown_evaluator_type_names_the_supported_ones(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "evalcases:\n  - id: c\n    expected_outcome: g\n    input: hi\n    evaluators:\n      - type: vibes\n",
    )
    _, issues = load_eval_file(path)
    assert len(issues) == 1 and issues[0].line == 6
    assert (
        "unknown evaluator type 'vibes'; supported: llm_judge, rubric, tool_trajectory, code_judge" in issues[0].message
    )


def test_evaluator_sources_case_then_execution_then_file_default(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "execution:\n  evaluators:\n    - {name: default, type: llm_judge}\n"
        "evalcases:\n"
        "  - {id: a, expected_outcome: g, input: hi}\n"
        "  - {id: b, expected_outcome: g, input: hi, evaluators: [{name: own, type: llm_judge}]}\n"
        "  - id: c\n    expected_outcome: g\n    input: hi\n"
        "    rubrics: [Says hi, {id: r2, description: Polite, weight: 2, required: false}]\n"
        "    execution: {evaluators: [{name: exec, type: code_judge, script: python3 judge.py --x 'a b'}]}\n",
    )
    loaded, issues = load_eval_file(path)
    assert issues == [] and loaded is not None
    a, b, c = loaded.cases
    assert [e.name for e in a.evaluators] == ["default"]
    assert [e.name for e in b.evaluators] == ["own"]
    assert [(e.name, e.type) for e in c.evaluators] == [("rubric", "rubric"), ("exec", "code_judge")]
    rubric = c.evaluators[0].rubrics
    assert [(r.id, r.description, r.weight, r.required) for r in rubric] == [
        ("rubric-1", "Says hi", 1.0, True),
        ("r2", "Polite", 2.0, False),
    ]
    assert c.evaluators[1].argv == ("python3", "judge.py", "--x", "a b")


def test_the_4x_dialect_maps_onto_the_same_model(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "tests:\n"
        "  - id: t\n    criteria: Says hello\n    input: Say hello\n    expected_output: Hello\n"
        "    input_messages: [{role: user, content: ignored in 4.x}]\n"
        "    assertions:\n"
        "      - {name: g, type: code-grader, command: [python3, g.py], weight: 2}\n"
        "      - {name: t, type: tool-trajectory, mode: exact, expected: [{tool: a}]}\n"
        "      - {name: l, type: llm-grader}\n"
        "      - {name: r, type: rubrics, criteria: [Greets]}\n"
        "      - {name: u, type: token_usage, max_total: 10}\n",
        name="greet.eval.yaml",
    )
    loaded, issues = load_eval_file(path)
    assert issues == [] and loaded is not None and loaded.dialect == "4.x"
    case = loaded.cases[0]
    assert (case.expected_outcome, case.question, case.reference_answer) == ("Says hello", "Say hello", "Hello")
    assert [(e.name, e.type, e.weight) for e in case.evaluators] == [
        ("g", "code_judge", 2.0),
        ("t", "tool_trajectory", 1.0),
        ("l", "llm_judge", 1.0),
        ("r", "rubric", 1.0),
        ("u", "token_usage", 1.0),
    ]
    assert case.evaluators[0].argv == ("python3", "g.py")
    assert [r.description for r in case.evaluators[3].rubrics] == ["Greets"]


def test_a_4x_test_needs_criteria_expected_output_or_assertions(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "tests:\n  - {id: bare, input: hi}\n  - {id: old, expected_outcome: seed spelling, input: hi}\n"
        "  - {id: graded, input: hi, assertions: [{type: latency, threshold: 5}]}\n"
        "  - {id: seed-input, criteria: c, input_messages: [{role: user, content: hi}]}\n",
    )
    loaded, issues = load_eval_file(path)
    assert loaded is not None
    assert [(c.id, c.expected_outcome) for c in loaded.cases] == [("old", "seed spelling"), ("graded", "")]
    assert [i.message for i in issues] == [
        "case 'bare' skipped: missing or invalid criteria (or expected_output, or assertions)",
        "case 'seed-input' skipped: missing or invalid input",
    ]


# -- the upstream corpus -----------------------------------------------------------------------------------

_UPSTREAM_TYPE = {"code_judge": "code", "rubric": "llm_judge"}


def _derived() -> list[dict[str, object]]:
    require(CORPUS)
    return list(json.loads((CORPUS / "derived" / "loader-validator-results.json").read_text())["results"])


def _upstream_file(name: str) -> Path:
    for folder in ("valid", "invalid"):
        if (CORPUS / folder / name).is_file():
            return CORPUS / folder / name
    raise AssertionError(f"{name} listed in the derived results but absent from the corpus")


def test_every_valid_corpus_file_loads_with_upstreams_cases_and_evaluators() -> None:
    checked = 0
    for entry in _derived():
        path = _upstream_file(str(entry["file"]))
        if "invalid" in path.parts:
            continue
        loaded, issues = load_eval_file(path)
        assert issues == [], path
        assert loaded is not None
        got = [(c.id, [f"{e.name}:{_UPSTREAM_TYPE.get(e.type, e.type)}" for e in c.evaluators]) for c in loaded.cases]
        cases = entry["cases"]
        assert isinstance(cases, list)
        expected = [(c["id"], [spec.split("@")[0].split("/")[0] for spec in c["evaluators"]]) for c in cases]
        assert got == expected, path
        assert validate_path(path).ok, path
        AgentVEvalFile.model_validate(yaml.safe_load(path.read_text()))  # the published schema accepts it
        checked += 1
    assert checked >= 25


def test_every_invalid_corpus_file_is_rejected_with_located_errors() -> None:
    _derived()
    files = sorted((CORPUS / "invalid").rglob("*.yaml"))
    assert files
    for path in files:
        result = validate_path(path)
        assert result.kind is not None and result.kind.name == "agentv"
        assert not result.ok
        assert all(str(i).startswith(f"{path}:2: evalcases.0: case 'test-1' skipped") for i in result.issues)


def test_4x_types_drift_does_not_run_are_refused_by_name(tmp_path: Path) -> None:
    path = write(tmp_path, "tests:\n  - id: t\n    input: hi\n    assertions:\n      - {type: skill-trigger}\n")
    _, issues = load_eval_file(path)
    assert [str(i) for i in issues] == [
        f"{path}:5: tests.0.assertions.0.type: evaluator type 'skill-trigger' (agentv 4.x) is not run by drift; "
        "see docs/formats/agentv.md"
    ]


def test_jsonl_datasets_with_a_sidecar_and_located_errors(tmp_path: Path) -> None:
    path = tmp_path / "cases.jsonl"
    path.write_text(
        '{"id": "a", "expected_outcome": "g", "input": "hi"}\n'
        "\n"
        "not json\n"
        '{"id": "b", "expected_outcome": "g"}\n'
        '{"id": "c", "outcome": "g", "input_messages": [{"role": "user", "content": "yo"}]}\n'
    )
    (tmp_path / "cases.yaml").write_text(
        "dataset: office\nexecution:\n  target: replay\n  evaluators:\n    - {name: j, type: llm_judge, weight: 2}\n"
    )
    loaded, issues = load_eval_file(path)
    assert loaded is not None and loaded.dialect == "seed" and loaded.target == "replay"
    assert [(c.id, c.dataset, c.line, [e.weight for e in c.evaluators]) for c in loaded.cases] == [
        ("a", "office", 1, [2.0]),
        ("c", "office", 5, [2.0]),
    ]
    assert [(i.line, i.message.split(":")[0]) for i in issues] == [(3, "not JSON"), (4, "case 'b' skipped")]


def test_a_jsonl_dataset_with_4x_keys_is_read_as_4x(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_text('{"id": "a", "criteria": "c", "input": "hi", "assertions": [{"type": "contains", "value": "x"}]}\n')
    loaded, issues = load_eval_file(path)
    assert issues == [] and loaded is not None and loaded.dialect == "4.x" and loaded.cases[0].dataset == "t"


def test_the_corpus_jsonl_dataset_loads_with_its_sidecar() -> None:
    path = CORPUS / "valid" / "examples" / "features" / "basic-jsonl" / "evals" / "dataset.jsonl"
    require(path)
    loaded, issues = load_eval_file(path)
    assert issues == [] and loaded is not None
    assert len(loaded.cases) == len([line for line in path.read_text().splitlines() if line.strip()]) == 7
    assert {c.dataset for c in loaded.cases} == {"basic-jsonl"}


# -- sidecars (issue 29, finding 9) ------------------------------------------------------------------------


def test_a_sidecar_supplies_target_and_evaluator_and_a_case_overrides_its_target(tmp_path: Path) -> None:
    path = tmp_path / "cases.jsonl"
    path.write_text(
        '{"id": "a", "expected_outcome": "g", "input": "hi"}\n'
        '{"id": "b", "expected_outcome": "g", "input": "yo", "execution": {"target": "other"}}\n'
    )
    (tmp_path / "cases.yaml").write_text("dataset: office\nexecution:\n  target: replay\nevaluator: llm_judge\n")
    loaded, issues = load_eval_file(path)
    assert issues == [] and loaded is not None and loaded.sidecar == tmp_path / "cases.yaml"
    assert (loaded.target, [(c.id, c.target, c.evaluators) for c in loaded.cases]) == (
        "replay",
        [("a", None, ()), ("b", "other", ())],
    )


def test_sidecar_keys_and_values_agentv_would_not_read_are_reported_at_their_line(tmp_path: Path) -> None:
    path = tmp_path / "cases.jsonl"
    path.write_text('{"id": "a", "expected_outcome": "g", "input": "hi"}\n')
    sidecar = tmp_path / "cases.yaml"
    sidecar.write_text("dataset: office\nevaluator: code_judge\nevalcases: []\nexecution: replay\n")
    loaded, issues = load_eval_file(path)
    assert loaded is not None and [c.id for c in loaded.cases] == ["a"]
    assert [(i.file, i.line, i.message.split(":")[0]) for i in issues] == [
        (str(sidecar), 2, "evaluator 'code_judge'"),
        (str(sidecar), 3, "not read from a sidecar"),
        (str(sidecar), 4, "execution must be a mapping (target, evaluators)"),
    ]


def test_a_default_evaluator_kind_other_than_llm_judge_is_reported_in_yaml_files(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "evaluator: llm_judge\nevalcases:\n  - id: a\n    expected_outcome: g\n    input: hi\n    evaluator: rubric\n",
    )
    loaded, issues = load_eval_file(path)
    assert loaded is not None and [c.id for c in loaded.cases] == ["a"]
    assert [(i.line, i.path) for i in issues] == [(6, "evalcases.0.evaluator")]


def test_a_sidecar_validates_as_the_sidecar_of_its_dataset(tmp_path: Path) -> None:
    (tmp_path / "cases.jsonl").write_text('{"id": "a", "expected_outcome": "g", "input": "hi"}\n')
    sidecar = tmp_path / "cases.yaml"
    sidecar.write_text("dataset: office\nexecution:\n  target: replay\n")
    result = validate_path(sidecar)
    assert result.ok and result.kind is not None and result.kind.name == "agentv-sidecar"
    sidecar.write_text("dataset: office\nexecution:\n  target: replay\ntests: 3\nnonsense: 1\n")
    assert not validate_path(sidecar).ok  # a case list makes it an eval file again, a broken one
    sidecar.write_text("dataset: office\nnonsense: 1\n")
    assert [(i.line, i.message.split(":")[0]) for i in validate_path(sidecar).issues] == [
        (2, "not read from a sidecar")
    ]
    (tmp_path / "cases.jsonl").unlink()
    assert validate_path(sidecar).kind is None  # without its dataset it is no AgentV file at all


def test_the_corpus_sidecar_validates_and_its_dataset_counts_the_default_evaluator() -> None:
    folder = require(CORPUS / "valid" / "examples" / "features" / "basic-jsonl" / "evals")
    assert validate_path(folder / "dataset.yaml").ok
    loaded, issues = load_eval_file(folder / "dataset.jsonl")
    assert issues == [] and loaded is not None and loaded.target == "default"
    assert {c.id: c.target for c in loaded.cases if c.target} == {"code-gen-python": "azure_base"}
