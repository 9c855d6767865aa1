"""Datasets (CSV / JSONL) and evaluation runs: label columns, exclusions, the FormatRun."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from engine.errors import ConfigurationError
from engine.formats.plexus.dataset import read_dataset
from engine.formats.plexus.evaluate import EvaluationOptions, evaluate
from tests.engine.formats.plexus.helpers import context, model, scorecard

CARD = """
name: Card
scores:
  - name: Polite
    graph: [{name: p, class: YesOrNoClassifier, user_message: "POLITE {{text}}"}]
  - name: Tone
    depends_on: {Polite: "No"}
    graph: [{name: t, class: Classifier, valid_classes: [Rude, Curt], user_message: "TONE {{text}}"}]
"""


def test_csv_rows_with_ids_metadata_and_both_label_spellings(tmp_path: Path) -> None:
    path = tmp_path / "d.csv"
    path.write_text('id,text,metadata,Polite_label,Tone\n7,hi,"{""a"": 1}",Yes,\n,yo,,no.,Curt\n')
    rows = read_dataset(path)
    assert [(r.item_id, r.text, r.metadata, r.line) for r in rows] == [("7", "hi", {"a": 1}, 2), ("2", "yo", {}, 3)]
    assert rows[0].label("Polite") == (True, "Yes") and rows[1].label("Tone") == (True, "Curt")
    assert rows[0].label("Missing") == (False, None)


def test_jsonl_rows_and_errors_name_the_line(tmp_path: Path) -> None:
    path = tmp_path / "d.jsonl"
    path.write_text('{"text": "a", "Polite": "yes"}\n\n{"text": 3}\n')
    with pytest.raises(ConfigurationError, match=r"d.jsonl:3: text: required"):
        read_dataset(path)
    path.write_text('{"text": "a", "metadata": {"k": "v"}, "Polite_label": "yes", "Polite": "no"}\n')
    [row] = read_dataset(path)
    assert row.metadata == {"k": "v"} and row.label("Polite") == (True, "yes")  # <score>_label wins


def test_a_csv_without_text_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "d.csv"
    path.write_text("body,Polite\nx,yes\n")
    with pytest.raises(ConfigurationError, match=r"d.csv:1: the header needs a 'text' column"):
        read_dataset(path)


async def test_evaluation_excludes_skipped_errored_and_unlabelled_items(tmp_path: Path) -> None:
    path = tmp_path / "d.jsonl"
    rows = [
        {"id": "a", "text": "nice", "Polite": "Yes", "Tone": ""},
        {"id": "b", "text": "rude", "Polite": "No.", "Tone": "rude"},
        {"id": "c", "text": "curt", "Polite": "no", "Tone": "Rude"},
        {"id": "d", "text": "broken", "Polite": "yes"},
        {"id": "e", "text": "unlabelled"},
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    scripted = model(
        [("POLITE nice", "Yes"), ("POLITE (rude|curt)", "No"), ("TONE rude", "Rude"), ("TONE curt", "Curt"),
         ("POLITE unlabelled", "Yes")],
        default="dunno",
    )  # fmt: skip
    options = EvaluationOptions(("Polite", "Tone"), concurrency=2)
    seen: list[str] = []
    run = await evaluate(
        scorecard(CARD), read_dataset(path), context(scripted), options, source="card.yaml", dataset=str(path),
        progress=lambda item: seen.append(item.item_id),
    )  # fmt: skip
    assert sorted(seen) == ["a", "b", "c", "d", "e"]
    assert (run.format, run.judge, run.source, run.status) == ("plexus", "scripted:rules", "card.yaml", "completed")
    polite, tone = run.summary["scores"]["Polite"], run.summary["scores"]["Tone"]
    # d answers "dunno" six times with no class: "unknown", compared against "yes"
    assert (polite["compared"], polite["unlabelled"], polite["accuracy"]) == (4, 1, 0.75)
    assert polite["confusion"] == {"no": {"no": 2}, "yes": {"unknown": 1, "yes": 1}}
    # a and e are skipped (Polite is Yes); d is unknown != "no", skipped too; c disagrees
    assert (tone["compared"], tone["skipped"], tone["accuracy"]) == (2, 3, 0.5)
    item_c = next(i for i in run.items if i.item_id == "c")
    assert [(s.name, s.value, s.verdict, s.details["label"]) for s in item_c.scores] == [
        ("Polite", "No", "agree", "no"),
        ("Tone", "Curt", "disagree", "rude"),
    ]
