"""Property: whatever a proposition or persona file contains, loading it raises PropositionFileError or succeeds.

Every reported issue must also be well formed (a file, a line >= 1, a message) so the CLI can print it.
"""

from __future__ import annotations

import string
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine.errors import PropositionFileError
from engine.models import Dimension
from engine.personas import load_persona
from engine.proposition_tree import validate_tree
from engine.propositions import PropositionFile, load_file, load_set

FUZZ = settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])

KNOWN_KEYS = [
    *PropositionFile.model_fields,
    "id",
    "claim",
    "weight",
    "inverted",
    "precondition",
    "name",
    "beliefs",
]

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(10**30), max_value=10**30),
    st.integers(min_value=0, max_value=2**64) | st.just(10**400),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=30),
    st.sampled_from([d.value for d in Dimension] + ["agent", "environment", "has_prior_actions", "{{agent_name}}"]),
)
keys = st.one_of(st.sampled_from(KNOWN_KEYS), st.text(string.ascii_letters + "_", min_size=1, max_size=12))
structures = st.recursive(
    scalars,
    lambda children: st.lists(children, max_size=5) | st.dictionaries(keys, children, max_size=6),
    max_leaves=40,
)
# Mostly well-formed files with fuzzed values, to get past the top-level checks into field validation.
proposition_like = st.fixed_dictionaries(
    {"id": scalars | st.just("p-1"), "claim": scalars | st.just("a claim")},
    optional={"weight": scalars, "inverted": scalars, "precondition": scalars, "double_check": scalars},
)
file_like = st.fixed_dictionaries(
    {"dimension": st.sampled_from([d.value for d in Dimension]) | scalars},
    optional={
        "agent_id": scalars,
        "hard": scalars,
        "first_n": scalars,
        "last_n": scalars,
        "target_type": scalars,
        "propositions": st.lists(proposition_like | structures, max_size=4) | structures,
    },
)


def assert_loads_or_reports(call: Any) -> None:
    try:
        call()
    except PropositionFileError as exc:
        assert exc.issues, "an error must carry at least one issue"
        for issue in exc.issues:
            assert issue.file and issue.message
            assert issue.line >= 0
            assert str(issue)  # renders without raising


@pytest.fixture
def target(tmp_path: Path) -> Path:
    return tmp_path / "fuzz.yaml"


@FUZZ
@given(text=st.text(max_size=400))
def test_arbitrary_text(target: Path, text: str) -> None:
    target.write_text(text, encoding="utf-8")
    assert_loads_or_reports(lambda: load_file(target))


@FUZZ
@given(raw=st.binary(max_size=300))
def test_arbitrary_bytes(target: Path, raw: bytes) -> None:
    target.write_bytes(raw)
    assert_loads_or_reports(lambda: load_file(target))


@FUZZ
@given(data=structures)
def test_arbitrary_yaml_structures(target: Path, data: Any) -> None:
    target.write_text(yaml.safe_dump(data, allow_unicode=True), encoding="utf-8")
    assert_loads_or_reports(lambda: load_file(target))


@FUZZ
@given(data=file_like)
def test_fuzzed_values_in_well_formed_files(target: Path, data: Any) -> None:
    target.write_text(yaml.safe_dump(data, allow_unicode=True), encoding="utf-8")
    assert_loads_or_reports(lambda: load_file(target))


@FUZZ
@given(text=st.text(alphabet=":-[]{}&*!|>'\"%@`#,? \t\nabc019", max_size=200))
def test_yaml_punctuation_soup(target: Path, text: str) -> None:
    target.write_text(text, encoding="utf-8")
    assert_loads_or_reports(lambda: load_file(target))


@FUZZ
@given(default=st.text(max_size=200), agent=file_like, persona=structures)
def test_tree_level_entry_points(tmp_path: Path, default: str, agent: Any, persona: Any) -> None:
    (tmp_path / "adherence").mkdir(exist_ok=True)
    (tmp_path / "personas").mkdir(exist_ok=True)
    (tmp_path / "adherence/_default.yaml").write_text(default, encoding="utf-8")
    (tmp_path / "adherence/kevin.yaml").write_text(yaml.safe_dump(agent), encoding="utf-8")
    (tmp_path / "personas/kevin.yaml").write_text(yaml.safe_dump(persona), encoding="utf-8")
    assert_loads_or_reports(lambda: load_set(tmp_path, Dimension.ADHERENCE, "kevin"))
    assert_loads_or_reports(lambda: load_persona(tmp_path, "kevin"))
    assert all(issue.message for issue in validate_tree(tmp_path))


@pytest.mark.parametrize(
    "text",
    [
        "[" * 5000,
        "a:\n" + "".join("  " * i + "b:\n" for i in range(1, 400)),
        "- " * 3000 + "x",
        # alias expansion ("billion laughs")
        "a: &a ['x','x','x','x','x','x','x','x','x','x']\n"
        + "".join(f"{n}: &{n} [{','.join(['*' + p] * 10)}]\n" for p, n in zip("abcdefgh", "bcdefghi", strict=True))
        + "dimension: *i\n",
        "first_n: " + "9" * 5000 + "\ndimension: adherence\n",
        "dimension: adherence\nweight: !!float 'abc'\n",
        "dimension: !!binary '###'\n",
        "dimension: !custom adherence\n",
        "dimension: !!python/object:os.system ls\n",
        "? [complex, key]\n: value\n",
        "dimension: adherence\nfirst_n: .inf\npropositions:\n  - {id: a, claim: b, weight: .nan}\n",
        "\x00\x01\x02",
        "\ufeffdimension: adherence\n",
        "dimension:\tadherence\n\t- tab\n",
        "%YAML 1.1\n%TAG ! tag:example.com,2000:\n---\ndimension: !foo x\n",
        "*undefined_alias\n",
        "&a [*a, *a]\n",
        "dimension: adherence\n<<: {hard: true}\n<<: 3\n",
    ],
)
def test_hostile_documents(target: Path, text: str) -> None:
    target.write_text(text, encoding="utf-8")
    assert_loads_or_reports(lambda: load_file(target))


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("[" * 5000, "nested too deeply"),
        ("x: " + "[" * 60 + "]" * 60 + "\n", "nested more than 50 levels deep"),
        (
            "a: &a ["
            + ",".join(["1"] * 100)
            + "]\n"
            + "b: &b ["
            + ",".join(["*a"] * 100)
            + "]\n"
            + "c: ["
            + ",".join(["*b"] * 100)
            + "]\n",
            "expands to more than",
        ),
        ("dimension: adherence\nfirst_n: " + "9" * 5000 + "\n", "cannot read this value"),
        ("dimension: \x07\n", "unreadable character #x0007"),
        ("dimension: adherence\npropositions: !!python/object/apply:os.system ['true']\n", "unsupported tag"),
        ("dimension: adherence\npropositions: !!set {a: null}\n", "unsupported tag"),
    ],
)
def test_hostile_documents_get_a_specific_message(target: Path, text: str, fragment: str) -> None:
    target.write_text(text, encoding="utf-8")
    with pytest.raises(PropositionFileError) as caught:
        load_file(target)
    assert any(fragment in issue.message for issue in caught.value.issues), caught.value.issues


def test_an_unreadable_character_after_non_ascii_text_is_on_its_own_line(target: Path) -> None:
    # libyaml counts positions in UTF-8 bytes: "é" and "—" are two and three bytes, one character each
    target.write_text("dimension: adherence\nname: café — Scranton\nnote: bell\x07\n", encoding="utf-8")
    with pytest.raises(PropositionFileError) as caught:
        load_file(target)
    assert [(i.line, i.message.split(":")[0]) for i in caught.value.issues] == [(3, "unreadable character #x0007")]


def test_the_loader_parses_with_libyaml_where_pyyaml_has_it() -> None:
    from engine.propositions.yamlsource import LineRecordingLoader

    assert issubclass(LineRecordingLoader, yaml.CSafeLoader) == yaml.__with_libyaml__
