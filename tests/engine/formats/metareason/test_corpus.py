"""The upstream MetaReason corpus (``../shared/corpus/metareason``): what loads, what is rejected, and how."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.formats.metareason.loader import check_family
from engine.formats.metareason.sampling import variants
from tests.peers import peer, skip_unless

CORPUS = peer("corpus", "metareason")
pytestmark = skip_unless(CORPUS)

#: the custom oracle the seed's complete example names, as if an installation had registered it
REGISTERED = {"ISOComplianceOracle"}


def _files(*parts: str) -> list[Path]:
    folder = CORPUS.joinpath(*parts)
    return sorted(p for p in folder.rglob("*") if p.suffix in {".yaml", ".yml"}) if folder.is_dir() else []


@pytest.mark.parametrize("path", _files("valid", "v1-prompt-family"), ids=lambda p: p.name)
def test_every_valid_v1_file_loads_and_renders(path: Path) -> None:
    loaded = check_family(path, REGISTERED)
    assert loaded.errors == ()
    assert loaded.family is not None
    assert all(w.message.startswith("warning: ") for w in loaded.warnings)
    sample = variants(loaded.family, 5)
    assert len(sample) == 5 and all(v.prompt.strip() for v in sample)


def test_the_complete_example_needs_its_custom_oracle_registered() -> None:
    path = CORPUS / "valid/v1-prompt-family/tests/test_yaml_spec_example__test_complete_spec_example.yaml"
    loaded = check_family(path, custom=set())
    assert [str(e) for e in loaded.errors] == [
        f"{path}:95: oracles.regulatory_alignment.class_name: custom oracle 'ISOComplianceOracle' is not "
        "registered by this installation (entry point group persona_drift.metareason_oracles; registered: "
        "none); drift never imports a module named in a file"
    ]


@pytest.mark.parametrize("path", _files("invalid", "v1-prompt-family"), ids=lambda p: p.name)
def test_every_invalid_v1_file_is_rejected_with_located_errors(path: Path) -> None:
    loaded = check_family(path, REGISTERED)
    assert loaded.family is None and loaded.errors
    for error in loaded.errors:
        assert error.file == str(path) and error.line >= 1 and error.message


@pytest.mark.parametrize(
    "path",
    [p for p in _files("valid", "v2-spec-pipeline") + _files("valid", "v3-current") + _files("invalid", "v3-current")],
    ids=lambda p: f"{p.parent.name}/{p.name}",
)
def test_later_formats_get_one_unsupported_format_error(path: Path) -> None:
    loaded = check_family(path, REGISTERED)
    assert loaded.family is None
    assert len(loaded.errors) == 1
    assert loaded.errors[0].path in {"spec_id", "pipeline"}
    assert loaded.errors[0].message.startswith("unsupported format: ")


def test_the_v1_shaped_file_filed_under_v2_is_rejected_for_its_extra_key() -> None:
    # bayesian_config_example.yaml has prompt_id/schema (v1 shape); upstream's v2 loader rejected it for missing
    # spec_id. Read as v1, its top-level 'analysis_thresholds' is not a field.
    path = CORPUS / "invalid/v2-spec-pipeline/bayesian_config_example.yaml"
    loaded = check_family(path, REGISTERED)
    assert [e.path for e in loaded.errors] == ["analysis_thresholds"]
    assert loaded.errors[0].line == 106


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("advanced_evaluation.yaml", "76: oracles.explainability.output_format: input should be 'binary', 'score' or"),
        ("environment_demo.yaml", "20: YAML syntax error"),
        ("base_config.yaml", "2: prompt_id: required key is missing"),
        ("tests/test_config_loader__test_invalid_yaml_syntax.yaml", "7: schema: input should be a valid dictionary"),
        ("tests/test_validator__test_validate_multiple_yaml_files.yaml", "7: axes.param.values: list should have"),
        ("tests/test_validator__test_validation_error.yaml", "2: prompt_id: string should have at least 1 character"),
    ],
)
def test_the_reason_upstream_gave_is_among_ours(name: str, expected: str) -> None:
    path = CORPUS / "invalid" / "v1-prompt-family" / name
    lines = [str(e) for e in check_family(path, REGISTERED).errors]
    assert any(line.startswith(f"{path}:{expected}") for line in lines), lines
