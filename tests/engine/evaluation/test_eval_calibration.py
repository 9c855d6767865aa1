"""Judge calibration against human labels: the label file, per-dimension rho and kappa."""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from pathlib import Path

import pytest

from engine.errors import ConfigurationError
from engine.evaluation.calibration import (
    CALIBRATION_CHANNEL,
    calibrate,
    read_labels,
    render_calibration,
    summarise,
)
from engine.evaluation.messages import MessageFileError
from engine.judges.scripted import ScriptedJudge
from engine.models import Dimension
from engine.settings import BUNDLED_PROPOSITIONS, REPO_ROOT

from .conftest import JudgeFactory, TreeFactory

JsonlFactory = Callable[..., Path]
LABELS_SAMPLE = REPO_ROOT / "ops" / "examples" / "labels_sample.jsonl"


def test_label_items_from_text_strings_and_events(jsonl_file: JsonlFactory) -> None:
    path = jsonl_file(
        [
            {"agent_id": "ann", "dimension": "adherence", "text": "hello", "label": 7},
            {"agent_id": "ann", "dimension": "consistency", "messages": ["one", "two"], "label": 3},
            {
                "agent_id": "ann",
                "dimension": "convergence",
                "messages": [{"agent_id": "bob", "text": "hi"}, {"agent_id": "ann", "text": "hey", "channel": "#x"}],
                "label": 0,
            },
        ],
        name="labels.jsonl",
    )
    text, pair, thread = read_labels(path)
    assert (text.dimension, text.label, [e.text for e in text.events]) == (Dimension.ADHERENCE, 7, ["hello"])
    assert [e.channel for e in pair.events] == [CALIBRATION_CHANNEL, CALIBRATION_CHANNEL]
    assert [(e.agent_id, e.channel) for e in thread.events] == [("bob", CALIBRATION_CHANNEL), ("ann", "#x")]


@pytest.mark.parametrize(
    ("record", "message"),
    [
        ({"agent_id": "ann", "dimension": "adherence", "label": 3}, "exactly one of 'text' and 'messages'"),
        ({"agent_id": "ann", "dimension": "adherence", "text": "x", "messages": ["y"], "label": 3}, "exactly one"),
        ({"agent_id": "ann", "dimension": "ideas_quantity", "text": "x", "label": 3}, "'dimension' must be one of"),
        ({"agent_id": "ann", "dimension": "adherence", "text": "x", "label": 10}, "'label' must be a whole number"),
        ({"agent_id": "ann", "dimension": "adherence", "text": "x", "label": True}, "'label' must be"),
        ({"agent_id": "", "dimension": "adherence", "text": "x", "label": 1}, "'agent_id'"),
        ({"agent_id": "ann", "dimension": "adherence", "messages": [], "label": 1}, "non-empty list"),
        (
            {"agent_id": "ann", "dimension": "convergence", "messages": [{"agent_id": "bob", "text": "x"}], "label": 1},
            "no message of agent 'ann'",
        ),
    ],
)
def test_bad_label_lines_are_reported_with_line_numbers(
    jsonl_file: JsonlFactory, record: dict[str, object], message: str
) -> None:
    good = {"agent_id": "ann", "dimension": "fluency", "text": "fine", "label": 5}
    path = jsonl_file([good, record], name="labels.jsonl")
    with pytest.raises(MessageFileError, match=message) as caught:
        read_labels(path)
    assert str(caught.value).startswith(f"{path}:2: ")


def test_an_empty_label_file_is_a_configuration_error(jsonl_file: JsonlFactory) -> None:
    with pytest.raises(ConfigurationError, match="holds no item"):
        read_labels(jsonl_file([""], name="labels.jsonl"))


def test_summary_statistics() -> None:
    perfect = summarise(Dimension.FLUENCY, [(2.0, 2), (5.2, 5), (8.0, 8)])
    assert perfect.spearman_rho == pytest.approx(1.0) and perfect.kappa == pytest.approx(1.0)
    assert perfect.mean_abs_diff == pytest.approx(0.2 / 3)
    reversed_ = summarise(Dimension.FLUENCY, [(8.0, 1), (5.0, 5), (1.0, 8)])
    assert reversed_.spearman_rho == pytest.approx(-1.0) and reversed_.kappa is not None and reversed_.kappa < 0
    constant = summarise(Dimension.FLUENCY, [(7.0, 2), (7.0, 8)])
    assert constant.spearman_rho is None  # undefined for a constant judge
    single = summarise(Dimension.FLUENCY, [(7.0, 2)])
    assert single.spearman_rho is None and single.kappa is None and single.n == 1


async def test_calibrate_scores_each_item_with_its_dimension(
    proposition_tree: TreeFactory, scripted: JudgeFactory, jsonl_file: JsonlFactory
) -> None:
    root = proposition_tree(personas=("ann",))
    path = jsonl_file(
        [
            {"agent_id": "ann", "dimension": "fluency", "text": "stiff and robotic", "label": 2},
            {"agent_id": "ann", "dimension": "fluency", "text": "lively chat", "label": 8},
            {"agent_id": "ann", "dimension": "fluency", "text": "ok-ish", "label": 5},
        ],
        name="labels.jsonl",
    )
    judge = scripted(
        default=5,
        rules=[{"message_contains": "robotic", "value": 1}, {"message_contains": "lively", "value": 9}],
    )
    (fluency,) = await calibrate(judge, read_labels(path), root)
    assert [p[0] for p in fluency.pairs] == [1.0, 9.0, 5.0]
    assert fluency.spearman_rho == pytest.approx(1.0)
    assert judge.log.calls[0].target_name == "Ann"  # plain messages carry the persona's name


async def test_the_shipped_label_sample_calibrates_the_sample_judge(sample_judge: ScriptedJudge) -> None:
    results = await calibrate(sample_judge, read_labels(LABELS_SAMPLE), BUNDLED_PROPOSITIONS)
    by_dimension = {r.dimension: r for r in results}
    assert set(by_dimension) == {Dimension.ADHERENCE, Dimension.CONSISTENCY, Dimension.FLUENCY, Dimension.CONVERGENCE}
    adherence = by_dimension[Dimension.ADHERENCE]
    assert adherence.n == 8 and adherence.spearman_rho is not None and adherence.spearman_rho > 0.5
    document = json.loads(render_calibration(results, as_json=True))
    assert document["adherence"]["n"] == 8 and len(document["adherence"]["pairs"]) == 8
    table = render_calibration(results)
    assert table.splitlines()[0].split() == ["dimension", "n", "rho", "kappa", "|diff|"]
    assert not math.isnan(document["fluency"]["quadratic_weighted_kappa"])
