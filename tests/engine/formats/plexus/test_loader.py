"""Structure rules of the loader: each problem is one located issue, the runnable entry point refuses."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.errors import ConfigurationError, PropositionFileError
from engine.formats.plexus.loader import inspect, load_runnable
from engine.formats.registry import validate_path

BASE = """name: S
key: s
model_provider: {provider}
graph:
  - name: first
    class: {node_class}
    user_message: "{message}"
    edge:
      node: {target}
  - name: second
    class: YesOrNoClassifier
"""


def _write(tmp_path: Path, text: str, name: str = "score.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def _issues(tmp_path: Path, **fields: str) -> list[str]:
    values = {"provider": "ChatOpenAI", "node_class": "Classifier", "message": "{{text}}", "target": "second"}
    values.update(fields)
    report = inspect(_write(tmp_path, BASE.format(**values)))
    return [f"{i.line}: {i.path}: {i.message}" for i in report.errors]


def test_a_good_score_has_no_issue(tmp_path: Path) -> None:
    assert _issues(tmp_path) == []


def test_an_unknown_provider_is_an_error(tmp_path: Path) -> None:
    assert _issues(tmp_path, provider="ChatMystery") == [
        "3: model_provider: unknown model provider 'ChatMystery'; known: ChatOpenAI, AzureChatOpenAI, ChatOllama, "
        "ChatAnthropic"
    ]


def test_an_unknown_node_class_is_an_error_with_a_suggestion(tmp_path: Path) -> None:
    [issue] = _issues(tmp_path, node_class="Clasifier")
    assert issue.startswith("6: graph.0.class: unknown node class 'Clasifier'; did you mean 'Classifier'")


def test_a_route_to_a_missing_node_is_an_error(tmp_path: Path) -> None:
    [issue] = _issues(tmp_path, target="secnd")
    assert issue.startswith("9: graph.0.edge.node: no node named 'secnd' (use 'END' to end the graph)")


def test_a_template_syntax_error_is_located(tmp_path: Path) -> None:
    assert _issues(tmp_path, message="{{text") == [
        "7: graph.0.user_message: template line 1: unexpected end of template, expected 'end of print statement'."
    ]


def test_a_code_syntax_error_points_at_the_code_line(tmp_path: Path) -> None:
    text = "name: S\nkey: s\ngraph:\n  - name: c\n    class: LogicalClassifier\n    code: |\n"
    text += "      def score(p, i):\n        return (\n"
    [issue] = inspect(_write(tmp_path, text)).errors
    assert (issue.line, issue.path) == (8, "graph.0.code") and issue.message.startswith("Python: ")


def test_a_logical_node_needs_its_function(tmp_path: Path) -> None:
    text = "name: S\nkey: s\ngraph:\n  - {name: c, class: LogicalNode, function_name: go, code: 'def other(c): pass'}\n"
    assert [i.message for i in inspect(_write(tmp_path, text)).errors] == ["the code defines no function 'go'"]


def test_an_unknown_top_level_key_is_an_error_and_an_unknown_node_key_a_warning(tmp_path: Path) -> None:
    text = "name: S\nkey: s\ngrpah: []\ngraph:\n  - {name: c, class: YesOrNoClassifier, batch: true}\n"
    report = inspect(_write(tmp_path, text))
    assert [str(i).split(": ", 1)[1] for i in report.errors] == ["grpah: unknown key 'grpah'; did you mean 'graph'?"]
    text = text.replace("grpah: []\n", "")
    report = inspect(_write(tmp_path, text))
    assert report.errors == () and [i.message for i in report.warnings] == [
        "key 'batch' is not used by drift (ignored)"
    ]


def test_dependencies_must_exist_and_not_cycle(tmp_path: Path) -> None:
    text = """name: C
key: c
scores:
  - {name: A, depends_on: [B], graph: [{name: a, class: YesOrNoClassifier}]}
  - {name: B, depends_on: {A: "Yes"}, graph: [{name: b, class: YesOrNoClassifier}]}
  - {name: D, depends_on: [Nope], graph: [{name: d, class: YesOrNoClassifier}]}
"""
    messages = sorted(i.message for i in inspect(_write(tmp_path, text)).errors)
    assert messages == ["dependency cycle: A -> B -> A", "no score named 'Nope' in this scorecard"]


def test_yes_and_no_read_as_booleans_are_class_names(tmp_path: Path) -> None:
    text = "name: S\nkey: s\ngraph:\n  - name: c\n    class: Classifier\n    valid_classes:\n      - Yes\n      - No\n"
    card = load_runnable(_write(tmp_path, text))
    graph = card.scores[0].graph
    assert graph is not None and graph[0].valid_classes == ["Yes", "No"]


def test_load_runnable_refuses_fragments_and_invalid_files(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match=r"not a runnable score \(no graph\)"):
        load_runnable(_write(tmp_path, "name: S\nkey: s\n"))
    with pytest.raises(PropositionFileError, match=r"score.yaml:1: key: required key is missing"):
        load_runnable(_write(tmp_path, "name: S\ngraph: []\n"))
    with pytest.raises(ConfigurationError, match="no score named 'B'; scores: A"):
        load_runnable(_write(tmp_path, "name: A\nkey: a\ngraph: [{name: x, class: YesOrNoClassifier}]\n"), "B")


def test_drift_validate_recognises_plexus_files(tmp_path: Path) -> None:
    good = validate_path(
        _write(tmp_path, BASE.format(provider="ChatOpenAI", node_class="Classifier", message="x", target="END"))
    )
    assert good.ok and good.kind is not None and good.kind.name == "plexus"
    bad = validate_path(
        _write(tmp_path, BASE.format(provider="Nope", node_class="Classifier", message="x", target="END"), "bad.yaml")
    )
    assert not bad.ok and bad.kind is not None and "unknown model provider" in bad.issues[0].message


def test_a_node_may_not_be_named_like_a_state_field(tmp_path: Path) -> None:
    text = "name: S\nkey: s\ngraph:\n  - {name: text, class: YesOrNoClassifier}\n"
    assert [str(i).split(": ", 1)[1] for i in inspect(_write(tmp_path, text)).errors] == [
        "graph.0.name: 'text' is a state field; name the node something else"
    ]
