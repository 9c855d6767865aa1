"""Dependencies between scores: order, results, conditions, SKIPPED cascades, concurrency."""

from __future__ import annotations

import asyncio

import pytest

from engine.formats.plexus.graph import Item
from engine.formats.plexus.model import DependencyCondition
from engine.formats.plexus.scorecard import condition_met, run_scorecard
from tests.engine.formats.plexus.helpers import BlockingModel, context, model, scorecard

CARD = """
name: Card
scores:
  - name: Root
    graph: [{name: r, class: Classifier, valid_classes: [Relevant, Not Relevant], user_message: "ROOT {{text}}"}]
  - name: Branch
    depends_on: {Root: {operator: "==", value: " relevant "}}
    graph: [{name: b, class: Classifier, valid_classes: [High, Low], user_message: 'BRANCH {{results["Root"].value}}'}]
  - name: Leaf
    depends_on: [Branch]
    graph: [{name: l, class: YesOrNoClassifier, user_message: 'LEAF {{results["Branch"].value}}'}]
  - name: Other
    depends_on: {Root: "Not Relevant"}
    graph: [{name: o, class: YesOrNoClassifier, user_message: "OTHER"}]
"""


async def test_dependents_run_after_their_dependencies_and_see_their_results() -> None:
    scripted = model([("ROOT", "Relevant"), ("BRANCH Relevant", "High"), ("LEAF High", "Yes"), ("OTHER", "No")])
    results = await run_scorecard(scorecard(CARD), Item("t"), context(scripted))
    assert {n: r.value for n, r in results.items()} == {
        "Root": "Relevant",
        "Branch": "High",
        "Leaf": "Yes",
        "Other": "SKIPPED",
    }
    assert results["Other"].explanation == "condition on 'Root' not met (its value is 'Relevant')"


async def test_an_unmet_condition_skips_and_the_skip_cascades() -> None:
    scripted = model([("ROOT", "not relevant"), ("OTHER", "Yes")])
    results = await run_scorecard(scorecard(CARD), Item("t"), context(scripted))
    assert {n: r.value for n, r in results.items()} == {
        "Root": "Not Relevant",
        "Branch": "SKIPPED",
        "Leaf": "SKIPPED",
        "Other": "Yes",
    }
    assert results["Leaf"].explanation == "dependency 'Branch' was skipped"
    assert [r.messages[0].content for r in scripted.requests if "LEAF" in r.messages[0].content] == []


async def test_only_runs_a_score_and_what_it_depends_on() -> None:
    scripted = model([("ROOT", "Relevant"), ("BRANCH", "Low")])
    results = await run_scorecard(scorecard(CARD), Item("t"), context(scripted), only="Branch")
    assert list(results) == ["Root", "Branch"]


async def test_independent_scores_run_concurrently() -> None:
    card = scorecard(
        "name: C\nscores:\n"
        "  - {name: A, graph: [{name: a, class: YesOrNoClassifier}]}\n"
        "  - {name: B, graph: [{name: b, class: YesOrNoClassifier}]}\n"
    )
    both = BlockingModel(expected=2, reply="Yes")  # answers only when both scores are asking at once
    results = await asyncio.wait_for(run_scorecard(card, Item("t"), context(both)), timeout=5)
    assert [r.value for r in results.values()] == ["Yes", "Yes"]


@pytest.mark.parametrize(
    ("operator", "expected", "value", "met"),
    [
        ("==", "Yes", "yes", True),
        ("==", "Yes", " YES ", True),
        ("==", "Yes", "No", False),
        ("!=", "No", "Yes", True),
        ("!=", "No", "no", False),
        ("in", ["Yes", "Maybe"], "maybe", True),
        ("in", ["Yes", "Maybe"], "No", False),
        ("not in", ["Yes", "Maybe"], "No", True),
        ("not in", ["Yes", "Maybe"], "YES", False),
    ],
)
def test_dependency_operators(operator: str, expected: str | list[str], value: str, met: bool) -> None:
    condition = DependencyCondition.model_validate({"operator": operator, "value": expected})
    assert condition_met(condition, value) is met


def test_a_plain_string_condition_means_equals() -> None:
    assert condition_met("Relevant", " relevant") and not condition_met("Relevant", "Not Relevant")
