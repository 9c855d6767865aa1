"""drift validate's registry: every bundled YAML is recognised by its contents and validates."""

from __future__ import annotations

from pathlib import Path

from engine.formats.registry import expand, validate_path
from engine.settings import BUNDLED_PROPOSITIONS


def test_every_bundled_yaml_file_is_recognised_and_valid() -> None:
    files = expand([BUNDLED_PROPOSITIONS])
    assert len(files) > 10
    results = [validate_path(path) for path in files]
    assert [(r.path.name, r.issues) for r in results if not r.ok] == []
    kinds = {r.kind.name for r in results if r.kind is not None}
    assert {"propositions", "interventions", "persona"} <= kinds


def test_an_unknown_file_is_reported_not_passed(tmp_path: Path) -> None:
    path = tmp_path / "thing.yaml"
    path.write_text("hello: world\n")
    result = validate_path(path)
    assert not result.ok
    assert "not a file kind drift knows" in str(result.issues[0])


def test_a_broken_file_of_a_known_kind_reports_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "adherence.yaml"
    path.write_text("dimension: adherence\npropositions:\n  - id: x\n    claim: 3\n    weight: -1\n")
    result = validate_path(path)
    assert result.kind is not None and result.kind.name == "propositions"
    assert result.issues
    assert all(str(i).startswith(f"{path}:") for i in result.issues)
