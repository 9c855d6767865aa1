"""Committed JSON Schemas, generated from the pydantic models that validate the same data.

``SCHEMAS`` maps a repo-relative output path to its model; add an entry to publish another schema.
Regenerate every file with ``python -m ops.schemas`` (``tests/test_schemas.py`` fails when one is stale).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from pydantic import BaseModel

from engine.formats.agentv.schema import AgentVEvalFile
from engine.formats.metareason.model import PromptFamily
from engine.formats.plexus.model import Score as PlexusScore
from engine.formats.plexus.model import Scorecard as PlexusScorecard
from engine.interventions.schema import InterventionFileModel
from engine.models import Persona
from engine.propositions import PropositionFile
from engine.simulation.scenario import Scenario
from streams.wire.payloads import TOPIC_MODELS

REPO_ROOT = Path(__file__).resolve().parent.parent
ID_PREFIX = "urn:persona-drift:"
JSON_SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"

#: repo-relative output path -> the model whose JSON Schema is written there.
SCHEMAS: dict[str, type[BaseModel]] = {
    "schemas/propositions.schema.json": PropositionFile,
    "schemas/persona.schema.json": Persona,
    "schemas/interventions.schema.json": InterventionFileModel,
    "schemas/metareason.schema.json": PromptFamily,
    "schemas/plexus-score.schema.json": PlexusScore,
    "schemas/plexus-scorecard.schema.json": PlexusScorecard,
    "schemas/agentv-eval.schema.json": AgentVEvalFile,
    "schemas/scenario.schema.json": Scenario,
    **{f"schemas/topics/{topic}.schema.json": model for topic, model in TOPIC_MODELS.items()},
}

REGENERATE_COMMAND = ".venv/bin/python -m ops.schemas"


def _output_path(model: type[BaseModel]) -> str:
    for path, registered in SCHEMAS.items():
        if registered is model:
            return path
    return f"schemas/{model.__name__.lower()}.schema.json"


def render(model: type[BaseModel], path: str | None = None) -> str:
    """The JSON Schema of ``model``: sorted keys, two-space indent, trailing newline, with $id and title."""
    schema = model.model_json_schema()
    schema["$schema"] = JSON_SCHEMA_DIALECT
    schema["$id"] = ID_PREFIX + (path or _output_path(model))
    schema.setdefault("title", model.__name__)
    return json.dumps(schema, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def write_all(root: Path = REPO_ROOT) -> list[Path]:
    """Write every registered schema under ``root``; return the files whose content changed."""
    changed: list[Path] = []
    for relative, model in SCHEMAS.items():
        target = root / relative
        text = render(model, relative)
        if target.is_file() and target.read_text(encoding="utf-8") == text:
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
        changed.append(target)
    return changed


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    root = Path(args[0]) if args else REPO_ROOT
    changed = write_all(root)
    for path in changed:
        print(f"wrote {path}")
    print(f"{len(SCHEMAS)} schemas, {len(changed)} updated")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
