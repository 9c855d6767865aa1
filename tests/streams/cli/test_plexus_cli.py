"""`drift plexus validate|predict|evaluate` on the corpus and the bundled persona-drift scorecard."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from streams.cli import app
from tests.peers import peer, skip_unless

REPO = Path(__file__).resolve().parents[3]
EXAMPLE = REPO / "ops" / "examples" / "plexus"
CARD = str(EXAMPLE / "persona_drift.yaml")
DATASET = str(EXAMPLE / "office_labels.csv")
RULES = f"scripted:{EXAMPLE / 'rules.yaml'}"
CORPUS = peer("corpus", "plexus")


def _invoke(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, list(args))
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        return 2, result.stdout, str(result.exception)
    return result.exit_code, result.stdout, result.stderr


def test_validate_reports_kinds_and_notes() -> None:
    code, out, err = _invoke("plexus", "validate", CARD)
    assert (code, err) == (0, "")
    assert out.split() == ["ok", "scorecard", CARD]


@skip_unless(CORPUS)
def test_validate_on_the_corpus_folders() -> None:
    code, out, _ = _invoke("plexus", "validate", str(CORPUS / "fragments"))
    assert code == 0
    assert out.count("not a runnable score (no graph)") == 8
    code, _, err = _invoke("plexus", "validate", str(CORPUS / "invalid" / "linter"))
    assert code == 2
    assert "score_tests__02_invalid-key-format.yaml:2: key: key 'BAD KEY WITH SPACES!' must be" in err


@pytest.fixture
def item(tmp_path: Path) -> Path:
    path = tmp_path / "item.json"
    metadata = {"agent": "angela", "persona": "Angela Martin: prim, controlling senior accountant."}
    path.write_text(json.dumps({"text": "OMG you guys! Group hug, right now!!!", "metadata": metadata}))
    return path


def test_predict_json_gives_value_explanation_and_path(item: Path) -> None:
    code, out, _ = _invoke("plexus", "predict", CARD, "--item", str(item), "--model", RULES, "--format", "json")
    assert code == 0, out
    data = json.loads(out)
    assert data["model"] == "scripted:rules.yaml"
    assert data["scores"]["Breaks Character"]["value"] == "Yes"
    assert data["scores"]["Breaks Character"]["path"] == ["character_analysis", "decide"]
    assert data["scores"]["Violated Trait"] == {
        "value": "Tone",
        "explanation": "The warmth and exclamation marks clash with her clipped style.\nTone",
        "path": ["trait"],
    }


def test_predict_text_shows_skipped_scores(item: Path) -> None:
    metadata = {"agent": "angela", "persona": "p"}
    item.write_text(json.dumps({"text": "Sprinkles hates tacky streamers.", "metadata": metadata}))
    code, out, _ = _invoke("plexus", "predict", CARD, "--item", str(item), "--model", RULES)
    assert code == 0, out
    assert "Breaks Character: No\n  path: character_analysis -> decide" in out
    assert "Violated Trait: SKIPPED" in out


def test_predict_text_with_metadata_and_an_error_value() -> None:
    metadata = json.dumps({"agent": "michael", "persona": "Michael Scott"})
    code, out, _ = _invoke(
        "plexus", "predict", CARD, "--text", "Per the quarterly variance analysis, EBITDA fell.", "--metadata",
        metadata, "--model", RULES, "--format", "json",
    )  # fmt: skip
    assert code == 0, out
    assert json.loads(out)["scores"]["Violated Trait"]["value"] == "Role Knowledge"
    code, out, err = _invoke("plexus", "predict", CARD, "--text", "hi", "--model", RULES, "--format", "json")
    assert code == 1 and "1 score(s) ended in ERROR: Breaks Character" in err  # an ERROR is no prediction
    scores = json.loads(out)["scores"]
    assert scores["Breaks Character"]["value"] == "ERROR" and scores["Violated Trait"]["value"] == "SKIPPED"
    assert "template error" in scores["Breaks Character"]["error"] and "agent" in scores["Breaks Character"]["error"]


def test_predict_needs_exactly_one_input() -> None:
    code, _, err = _invoke("plexus", "predict", CARD, "--model", RULES)
    assert (code, err) == (2, "give exactly one of --text and --item")


def test_evaluate_the_bundled_dataset_offline() -> None:
    code, out, _ = _invoke("plexus", "evaluate", CARD, "--dataset", DATASET, "--model", RULES, "--format", "json")
    assert code == 0, out
    run = json.loads(out)
    assert (run["format"], run["judge"], len(run["items"])) == ("plexus", "scripted:rules.yaml", 13)
    breaks = run["summary"]["scores"]["Breaks Character"]
    # the rules miss m08 and flag m13 (strict persona): 11 of 13 agree
    metrics = (breaks["compared"], breaks["accuracy"], breaks["precision"], breaks["recall"])
    assert metrics == (13, 11 / 13, 5 / 6, 5 / 6)
    assert breaks["confusion"] == {"no": {"no": 6, "yes": 1}, "yes": {"no": 1, "yes": 5}}
    trait = run["summary"]["scores"]["Violated Trait"]
    assert (trait["compared"], trait["skipped"]) == (6, 7)


@pytest.mark.parametrize(("fmt", "marker"), [("table", "score             n"), ("markdown", "| score | n |")])
def test_evaluate_table_and_markdown(fmt: str, marker: str) -> None:
    code, out, _ = _invoke(
        "plexus", "evaluate", CARD, "--dataset", DATASET, "--model", RULES, "--format", fmt, "--score",
        "Breaks Character",
    )  # fmt: skip
    assert code == 0, out
    assert marker in out and "model: scripted:rules.yaml" in out
    assert "Violated Trait" not in out
