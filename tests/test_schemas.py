"""The committed JSON Schemas match their models, and the bundled YAML files satisfy them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from pydantic import BaseModel

from engine.models import Dimension, Persona
from engine.propositions import PropositionFile
from ops.schemas import REGENERATE_COMMAND, REPO_ROOT, SCHEMAS, main, render, write_all

BUNDLED = REPO_ROOT / "propositions"


@pytest.mark.parametrize(("relative", "model"), sorted(SCHEMAS.items()))
def test_committed_schema_is_current(relative: str, model: type[BaseModel]) -> None:
    path = REPO_ROOT / relative
    expected = render(model, relative)
    assert path.is_file(), f"{relative} is missing; run `{REGENERATE_COMMAND}`"
    assert path.read_text(encoding="utf-8") == expected, f"{relative} is stale; run `{REGENERATE_COMMAND}`"


@pytest.mark.parametrize(("relative", "model"), sorted(SCHEMAS.items()))
def test_rendered_schema_is_canonical_json(relative: str, model: type[BaseModel]) -> None:
    text = render(model, relative)
    schema = json.loads(text)
    assert text.endswith("}\n")
    assert text == json.dumps(schema, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
    assert schema["$id"].endswith(relative) and schema["title"]
    if relative.startswith("schemas/topics/"):
        # topic payloads are forward compatible: consumers ignore fields they do not know
        assert "additionalProperties" not in schema
    elif model is Persona:
        # persona specs are free-form beyond their named fields (TinyTroupe-style nesting)
        assert schema["additionalProperties"] == {"$ref": "#/$defs/JsonValue"}
    else:
        assert schema["additionalProperties"] is False  # YAML files: unknown keys are errors


def test_proposition_schema_mirrors_the_model() -> None:
    schema = json.loads(render(PropositionFile))
    assert schema["required"] == ["dimension"]
    assert schema["$defs"]["Dimension"]["enum"] == [d.value for d in Dimension]
    proposition = schema["$defs"]["Proposition"]
    assert sorted(proposition["required"]) == ["claim", "id"]
    assert proposition["additionalProperties"] is False
    assert proposition["properties"]["weight"]["minimum"] == 0
    assert "pattern" in proposition["properties"]["id"]


def _yaml_files(folder: Path) -> list[Path]:
    return sorted(folder.glob("*.yaml"))


@pytest.mark.parametrize("dimension", list(Dimension))
def test_bundled_proposition_files_satisfy_the_schema(dimension: Dimension) -> None:
    files = _yaml_files(BUNDLED / dimension.value)
    assert files, f"no files for {dimension.value}"
    for path in files:
        model = PropositionFile.model_validate(yaml.safe_load(path.read_text(encoding="utf-8")))
        assert model.dimension is dimension


def test_bundled_personas_satisfy_the_schema() -> None:
    files = _yaml_files(BUNDLED / "personas")
    assert len(files) >= 5
    for path in files:
        assert Persona.model_validate(yaml.safe_load(path.read_text(encoding="utf-8"))).id == path.stem


def test_write_all_writes_then_reports_nothing_to_do(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    written = write_all(tmp_path)
    assert sorted(p.relative_to(tmp_path).as_posix() for p in written) == sorted(SCHEMAS)
    assert write_all(tmp_path) == []
    (tmp_path / "schemas/persona.schema.json").write_text("{}\n", encoding="utf-8")
    assert main([str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "wrote" in out and "persona.schema.json" in out and "1 updated" in out
    assert json.loads((tmp_path / "schemas/persona.schema.json").read_text(encoding="utf-8"))["title"]
