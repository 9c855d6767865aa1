"""Every validation rule of seed 002 (and ours), with the exact located message."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.errors import PropositionFileError
from engine.formats.metareason.loader import check_family, read_family
from engine.formats.registry import validate_path

GOOD = """\
prompt_id: tone_check
prompt_template: "{{ verb }} the {{topic}} at {{ temperature }}"
schema:
  verb:
    type: categorical
    values: [explain, describe]
    weights: [0.5, 0.5]
  topic:
    type: categorical
    values: [beets, paper]
  temperature:
    type: truncated_normal
    mu: 0.5
    sigma: 0.1
    min: 0.0
    max: 1.0
n_variants: 100
oracles:
  judged:
    type: llm_judge
    rubric: stays in character
"""


def _errors(tmp_path: Path, text: str, custom: set[str] | None = None) -> list[str]:
    path = tmp_path / "family.yaml"
    path.write_text(text)
    return [str(e).removeprefix(f"{path}:") for e in check_family(path, custom or set()).errors]


def test_a_good_family_loads_with_defaults(tmp_path: Path) -> None:
    path = tmp_path / "family.yaml"
    path.write_text(GOOD)
    family = read_family(path, set())
    assert family.sampling.method == "latin_hypercube" and family.sampling.random_seed == 42
    assert family.statistical_config.output.hdi_method == "shortest"
    assert list(family.axis_map) == ["verb", "topic", "temperature"]


def test_required_fields(tmp_path: Path) -> None:
    assert _errors(tmp_path, "n_variants: 100\n") == [
        "1: prompt_id: required key is missing",
        "1: prompt_template: required key is missing",
        "1: oracles: required key is missing",
    ]
    head, tail = GOOD.split("schema:")
    without = head + "n_variants:" + tail.split("n_variants:")[1]
    assert _errors(tmp_path, without)[0] == "1: schema: required key is missing (the axes, as 'schema' or 'axes')"
    no_axes = GOOD.replace("schema:", "unused:")
    assert "3: unused: unknown key 'unused'" in _errors(tmp_path, no_axes)[0]


def test_axes_may_be_spelt_axes_but_not_both(tmp_path: Path) -> None:
    assert _errors(tmp_path, GOOD.replace("schema:", "axes:")) == []
    both = GOOD + "axes:\n  x:\n    type: uniform\n    min: 0\n    max: 1\n"
    assert _errors(tmp_path, both) == ["22: axes: give the axes once, as 'schema' or as 'axes', not both"]


def test_template_variables_must_be_axes_with_or_without_spaces(tmp_path: Path) -> None:
    text = GOOD.replace("{{topic}}", "{{topc}}").replace("{{ verb }}", "{{  tone  }}")
    assert _errors(tmp_path, text) == [
        "2: prompt_template: template variable 'tone' is not an axis in schema (axes: verb, topic, temperature)",
        "2: prompt_template: template variable 'topc' is not an axis in schema; did you mean 'topic'? "
        "(axes: verb, topic, temperature)",
    ]


def test_a_template_that_does_not_parse(tmp_path: Path) -> None:
    assert _errors(tmp_path, GOOD.replace("{{topic}}", "{{topic")) == [
        "2: prompt_template: template syntax error: expected token 'end of print statement', got 'at' (template line 1)"
    ]


def test_weights_must_sum_to_one_within_a_thousandth(tmp_path: Path) -> None:
    assert _errors(tmp_path, GOOD.replace("[0.5, 0.5]", "[0.5, 0.5009]")) == []
    assert _errors(tmp_path, GOOD.replace("[0.5, 0.5]", "[0.5, 0.502]")) == [
        "7: schema.verb.weights: weights must sum to 1.0 (± 0.001), they sum to 1.002"
    ]
    assert _errors(tmp_path, GOOD.replace("[0.5, 0.5]", "[1.0]")) == [
        "7: schema.verb.weights: weights has 1 entries but values has 2"
    ]


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        ("sigma: 0.1", "sigma: 0", "14: schema.temperature.sigma: input should be greater than 0 (got 0)"),
        ("max: 1.0", "max: 0.0", "16: schema.temperature.max: max must be greater than min (min 0, max 0)"),
        ("mu: 0.5", "mu: .inf", "13: schema.temperature.mu: input should be a finite number (got inf)"),
    ],
)
def test_distribution_parameters(tmp_path: Path, old: str, new: str, expected: str) -> None:
    assert _errors(tmp_path, GOOD.replace(old, new)) == [expected]


def test_beta_and_uniform_parameters(tmp_path: Path) -> None:
    beta = GOOD.replace(
        "type: truncated_normal\n    mu: 0.5\n    sigma: 0.1\n    min: 0.0\n    max: 1.0",
        "type: beta\n    alpha: 0\n    beta: -1",
    )
    assert _errors(tmp_path, beta) == [
        "13: schema.temperature.alpha: input should be greater than 0 (got 0)",
        "14: schema.temperature.beta: input should be greater than 0 (got -1)",
    ]
    uniform = GOOD.replace("type: truncated_normal\n    mu: 0.5\n    sigma: 0.1\n", "type: uniform\n")
    assert _errors(tmp_path, uniform) == []
    assert _errors(tmp_path, GOOD.replace("type: truncated_normal", "type: poisson")) == [
        "12: schema.temperature.type: unknown type 'poisson'; expected one of: categorical, truncated_normal, "
        "uniform, beta"
    ]


def test_oracle_thresholds_lie_in_the_unit_interval(tmp_path: Path) -> None:
    text = GOOD + "  close:\n    type: embedding_similarity\n    canonical_answer: x\n    threshold: 1.5\n"
    assert _errors(tmp_path, text) == ["25: oracles.close.threshold: input should be less than or equal to 1 (got 1.5)"]


@pytest.mark.parametrize(("n", "ok"), [(99, False), (100, True), (10_000, True), (10_001, False)])
def test_n_variants_between_100_and_10000(tmp_path: Path, n: int, ok: bool) -> None:
    errors = _errors(tmp_path, GOOD.replace("n_variants: 100", f"n_variants: {n}"))
    assert (errors == []) is ok
    if not ok:
        assert errors[0].startswith("17: n_variants: input should be")


def test_stratified_by_names_categorical_axes(tmp_path: Path) -> None:
    text = GOOD + "sampling:\n  stratified_by: [topic, temperature, topik]\n"
    assert _errors(tmp_path, text) == [
        "23: sampling.stratified_by.1: 'temperature' is not categorical; only categorical axes form strata",
        "23: sampling.stratified_by.2: 'topik' is not an axis; did you mean 'topic'?",
    ]


def test_optimization_criterion_is_for_latin_hypercube(tmp_path: Path) -> None:
    text = GOOD + "sampling:\n  method: sobol\n  optimization_criterion: maximin\n"
    assert _errors(tmp_path, text) == [
        "24: sampling.optimization_criterion: applies to latin_hypercube only, not to method 'sobol'"
    ]


def test_at_least_one_oracle_and_calibration_needs_another(tmp_path: Path) -> None:
    head = GOOD.split("oracles:", maxsplit=1)[0]
    assert _errors(tmp_path, head + "oracles: {}\n") == ["18: oracles: at least one oracle is required"]
    only = head + "oracles:\n  c:\n    type: statistical_calibration\n    expected_confidence: 0.9\n"
    assert _errors(tmp_path, only) == [
        "18: oracles: statistical_calibration compares the other oracles' success: add one"
    ]


def test_an_unregistered_custom_oracle_is_a_validation_error(tmp_path: Path) -> None:
    text = GOOD + "  compliance:\n    type: custom\n    module: evil.payload\n    class: Backdoor\n"
    assert _errors(tmp_path, text, {"ToneOracle"}) == [
        "25: oracles.compliance.class: custom oracle 'Backdoor' is not registered by this installation (entry point "
        "group persona_drift.metareason_oracles; registered: ToneOracle); drift never imports a module named in a file"
    ]
    assert _errors(tmp_path, text, {"Backdoor"}) == []
    both = text + "    class_name: Backdoor\n"
    assert _errors(tmp_path, both, {"Backdoor"}) == [
        "22: oracles.compliance: a custom oracle needs exactly one of 'class' and 'class_name'"
    ]


def test_unknown_keys_get_suggestions_and_env_placeholders_are_named(tmp_path: Path) -> None:
    text = GOOD.replace("rubric: stays", "rubrik: stays").replace("n_variants: 100", "n_variants: ${N:100}")
    assert _errors(tmp_path, text) == [
        "17: n_variants: input should be a valid integer, unable to parse string as an integer; "
        "${VAR:default} substitution is not supported",
        "19: oracles.judged.rubric: required key is missing",
        "21: oracles.judged.rubrik: unknown key 'rubrik'; did you mean 'rubric'?",
    ]


def test_unused_categorical_axes_are_warnings_only(tmp_path: Path) -> None:
    path = tmp_path / "family.yaml"
    path.write_text(GOOD.replace(" the {{topic}}", ""))
    loaded = check_family(path, set())
    assert loaded.family is not None and loaded.errors == ()
    assert [str(w) for w in loaded.warnings] == [
        f"{path}:8: schema.topic: warning: categorical axis is not used by prompt_template"
    ]


def test_read_family_raises_every_issue(tmp_path: Path) -> None:
    path = tmp_path / "family.yaml"
    path.write_text("prompt_id: ''\n")
    with pytest.raises(PropositionFileError) as caught:
        read_family(path, set())
    assert len(caught.value.issues) == 3


def test_drift_validate_knows_the_kind(tmp_path: Path) -> None:
    path = tmp_path / "family.yaml"
    path.write_text(GOOD)
    result = validate_path(path)
    assert result.ok and result.kind is not None and result.kind.name == "metareason"
    later = tmp_path / "later.yaml"
    later.write_text("spec_id: x\npipeline: []\n")
    result = validate_path(later)
    assert result.kind is not None and result.kind.name == "metareason"
    assert [i.message.split(":")[0] for i in result.issues] == ["unsupported format"]
