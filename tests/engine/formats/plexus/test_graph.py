"""One score's graph: routing by output / conditions / edge / END, state, results, errors, retries."""

from __future__ import annotations

import asyncio

from engine.formats.plexus.graph import Item, run_score
from engine.formats.plexus.nodes import UNKNOWN, best_span, slice_text
from tests.engine.formats.plexus.helpers import BlockingModel, context, model, run, score

ROUTED = """
name: Routed
graph:
  - name: gate
    class: Classifier
    valid_classes: ["Yes", "No", "Maybe"]
    user_message: "GATE {{text}}"
    conditions:
      - value: "yes"
        node: END
        output: {value: "NA", explanation: "stopped early"}
      - value: "Maybe"
        node: judge
        output: {doubt: classification}
    edge:
      node: judge
      output: {gate_answer: classification, gate_reason: explanation}
  - name: middle
    class: YesOrNoClassifier
    user_message: "MIDDLE"
  - name: judge
    class: Classifier
    valid_classes: ["Good", "Bad"]
    user_message: "JUDGE {{text}} {{gate.classification}}"
output:
  value: classification
  explanation: explanation
"""


async def test_a_matching_condition_to_end_stops_and_keeps_its_output() -> None:
    result = await run(score(ROUTED), model([("GATE", "Reasoning.\nYES")]))
    assert (result.value, result.explanation, result.path) == ("NA", "stopped early", ("gate",))
    assert result.state["gate"]["classification"] == "Yes"


async def test_a_condition_goes_to_its_node_skipping_the_ones_between() -> None:
    result = await run(score(ROUTED), model([("GATE", "maybe"), ("JUDGE", "Looks fine.\nGood")]))
    assert result.path == ("gate", "judge")
    assert (result.value, result.state["doubt"]) == ("Good", "Maybe")


async def test_no_matching_condition_takes_the_edge_with_its_aliases() -> None:
    result = await run(score(ROUTED), model([("GATE", "Because.\nNo"), ("JUDGE hello No", "Bad")]))
    assert result.path == ("gate", "judge")
    assert result.state["gate_answer"] == "No" and result.state["gate_reason"] == "Because.\nNo"
    assert (result.value, result.explanation) == ("Bad", "Bad")


async def test_output_copies_state_fields_or_writes_literals_then_goes_to_the_next_node() -> None:
    one = score(
        """
name: Setter
graph:
  - name: first
    class: YesOrNoClassifier
    user_message: "FIRST"
    output: {answer: classification, source: "fixed text", why: explanation}
  - name: second
    class: Classifier
    valid_classes: [A, B]
    user_message: "SECOND {{answer}} {{source}}"
"""
    )
    scripted = model([("SECOND Yes fixed text", "B"), ("FIRST", "yes")])
    result = await run(one, scripted)
    assert result.path == ("first", "second")
    assert (result.state["answer"], result.state["source"], result.state["why"]) == ("Yes", "fixed text", "yes")
    assert result.value == "B"  # no score-level output: the last classification
    assert result.state["first"] == {"classification": "Yes", "explanation": "yes", "value": "Yes", "confidence": None}


async def test_a_score_without_value_or_classification_is_no() -> None:
    one = score("name: X\ngraph:\n  - {name: grab, class: Extractor, trust_model_output: true}\n")
    result = await run(one, model([], default="a quote"))
    assert (result.value, result.state["extracted_text"]) == ("No", "a quote")


async def test_a_template_error_makes_the_score_error_and_names_the_node() -> None:
    one = score("name: X\ngraph:\n  - {name: ask, class: YesOrNoClassifier, user_message: '{{missing}}'}\n")
    result = await run(one, model([], default="Yes"))
    assert (result.value, result.status, result.path) == ("ERROR", "error", ("ask",))
    assert result.error is not None and result.error.startswith("node 'ask': ") and "missing" in result.error


async def test_a_timeout_makes_the_score_error() -> None:
    one = score("name: X\ngraph:\n  - {name: slow, class: YesOrNoClassifier}\n")
    never = BlockingModel(expected=2, reply="Yes")  # only one request ever comes: it waits forever
    result = await run_score(one, Item("t"), context(never), {}, timeout_s=0.05)
    assert (result.value, result.error) == ("ERROR", "timed out after 0.05 s in node 'slow'")


RETRY = "name: X\ngraph:\n  - {{name: c, class: Classifier, valid_classes: [Up, Down], maximum_retry_count: {}}}\n"


async def test_an_invalid_answer_is_retried_with_a_correction_then_accepted() -> None:
    one = score(RETRY.format(2))
    scripted = model([("", ["I am unsure", "Still thinking", "Down"])])
    result = await run(one, scripted)
    assert result.value == "Down"
    assert len(scripted.requests) == 3
    last = scripted.requests[-1].messages
    assert [m.role for m in last] == ["user", "assistant", "user", "assistant", "user"]
    assert last[1].content == "I am unsure" and '"Up", "Down"' in last[2].content


async def test_retries_stop_at_the_maximum_and_give_unknown() -> None:
    one = score(RETRY.format(1))
    scripted = model([], default="no idea")
    result = await run(one, scripted)
    assert (result.value, len(scripted.requests)) == (UNKNOWN, 2)


async def test_confidence_is_asked_for_and_read_when_enabled() -> None:
    one = score("name: X\ngraph:\n  - {name: c, class: YesOrNoClassifier, enable_confidence: true}\n")
    scripted = model([("Confidence: P", "Yes\nConfidence: 0.8")])
    result = await run(one, scripted)
    assert (result.value, result.confidence) == ("Yes", 0.8)


async def test_an_edge_loop_is_stopped_with_an_error() -> None:
    one = score("name: X\ngraph:\n  - {name: a, class: YesOrNoClassifier, edge: {node: a}}\n")
    result = await run(one, model([], default="Yes"))
    assert result.value == "ERROR" and "ran more than 5 times" in (result.error or "")


async def test_templates_see_text_metadata_and_earlier_nodes() -> None:
    one = score(
        "name: X\ngraph:\n"
        "  - {name: a, class: YesOrNoClassifier, user_message: 'A {{text}}'}\n"
        "  - {name: b, class: YesOrNoClassifier, user_message: 'B {{metadata.agent}} {{a.classification}}'}\n"
    )
    scripted = model([("B dwight Yes", "No"), ("A hi", "Yes")])
    result = await run(one, scripted, text="hi", agent="dwight")
    assert result.value == "No" and [r.messages[0].content for r in scripted.requests] == ["A hi", "B dwight Yes"]


def test_extractor_span_is_the_best_fuzzy_match_of_the_source() -> None:
    source = "Hello there. The dose is 20 mg twice a day. Goodbye."
    assert best_span("dose is 20mg twice a day", source, 50) == "dose is 20 mg twice a day"
    assert best_span("completely unrelated words xyz", source, 50) is None


async def test_extractor_falls_back_to_the_model_text() -> None:
    one = score("name: X\ngraph:\n  - {name: e, class: Extractor}\n")
    result = await run(one, model([], default="qqqq zzzz"), text="Hello there.")
    assert result.state["extracted_text"] == "qqqq zzzz"


def test_slicer_splits_at_the_quoted_sentence() -> None:
    text = "Hi, this is Sam. Can I get your date of birth? Sure, it is May 1."
    assert slice_text('Quote: "can I get your date of birth"', text) == (
        "Hi, this is Sam. ",
        "Can I get your date of birth? Sure, it is May 1.",
    )
    assert slice_text("nothing like it at all qq", text) == ("", text)


async def test_independent_llm_calls_do_not_block_each_other() -> None:
    one = score("name: X\ngraph:\n  - {name: c, class: YesOrNoClassifier}\n")
    both = BlockingModel(expected=2, reply="Yes")
    results = await asyncio.wait_for(
        asyncio.gather(run_score(one, Item("a"), context(both), {}), run_score(one, Item("b"), context(both), {})),
        timeout=5,
    )
    assert [r.value for r in results] == ["Yes", "Yes"]


async def test_input_aliases_copy_state_fields_before_the_node_runs() -> None:
    one = score(
        "name: X\ngraph:\n"
        "  - {name: grab, class: Extractor, trust_model_output: true}\n"
        "  - {name: judge, class: YesOrNoClassifier, input: {text: extracted_text}, user_message: 'J {{text}}'}\n"
    )
    scripted = model([("J the quote", "Yes")], default="the quote")
    result = await run(one, scripted, text="a long transcript")
    assert result.value == "Yes" and scripted.requests[-1].messages[0].content == "J the quote"
