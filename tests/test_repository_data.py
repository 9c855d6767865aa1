"""Tests and benchmarks read only data in the repository; data beside it (the format corpora, the paper's raw
files) is reached through tests/peers.py, which skips with the place it looked in when the data is absent, so the
suite and ``make bench`` pass on a clone anywhere (issue 29, finding 10)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from engine.formats.metareason.sampling import variants
from ops.bench import metareason
from tests import peers

REPO = Path(__file__).resolve().parents[1]
#: The helper itself, and this file (whose examples of what is refused would match).
EXEMPT = {REPO / "tests" / "peers.py", Path(__file__).resolve()}
#: A path that leaves the repository by name: a ``".."`` part, a ``shared`` folder, the machine's ``/work`` tree.
#: (``"../etc"`` strings are left alone: the path-traversal tests feed them to the loaders on purpose.)
_OUTSIDE = re.compile(r"""["']\.\.["']|["']shared["']|["'][^"'\n]*/work/""")
_PARENTS = re.compile(r"__file__\)\.resolve\(\)\.parents\[(\d+)\]|HERE\.parents\[(\d+)\]")


def _sources() -> list[Path]:
    return [p for top in ("tests", "ops") for p in sorted((REPO / top).rglob("*.py")) if p not in EXEMPT]


def _escapes(path: Path, text: str) -> list[str]:
    relative = path.relative_to(REPO).parts
    found = [f"{path.relative_to(REPO)}: {m.group(0)}" for m in _OUTSIDE.finditer(text)]
    for match in _PARENTS.finditer(text):
        depth = int(match.group(1) or match.group(2)) + (0 if match.group(1) else 1)
        if depth > len(relative) - 1:
            found.append(f"{path.relative_to(REPO)}: {match.group(0)} leaves the repository")
    return found


def test_no_test_or_benchmark_reaches_outside_the_repository_except_through_the_peers_helper() -> None:
    offenders = [hit for path in _sources() for hit in _escapes(path, path.read_text(encoding="utf-8"))]
    assert offenders == []


def test_the_scan_catches_the_ways_a_path_leaves_the_repository() -> None:
    bench = REPO / "ops" / "bench" / "x.py"
    assert _escapes(bench, 'SHARED = Path(__file__).resolve().parents[2] / ".." / "shared"')
    assert _escapes(bench, 'Path("/work/shared/corpus")')
    assert _escapes(bench, "ROOT = Path(__file__).resolve().parents[3]")
    assert not _escapes(bench, "ROOT = Path(__file__).resolve().parents[2]")


def test_the_metareason_benchmark_family_is_in_the_repository_and_loads() -> None:
    assert metareason.FAMILY.is_relative_to(REPO) and metareason.FAMILY.is_file()
    family = metareason.bench_family()
    assert len(family.axis_map) == 7 and len(family.sampling.stratified_by) == 2
    assert len(variants(family, 50)) == 50


def test_absent_peer_data_skips_with_the_places_it_looked_in(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PERSONA_DRIFT_SHARED", str(tmp_path / "nowhere"))
    monkeypatch.setattr(peers, "REPO", tmp_path / "clone")
    monkeypatch.setattr(peers, "_candidates", lambda: [tmp_path / "nowhere", tmp_path / "shared"])
    missing = peers.peer("corpus", "agentv")
    with pytest.raises(pytest.skip.Exception, match=r"optional peer data not found: .*corpus/agentv .*nowhere"):
        peers.require(missing)
    marker = peers.skip_unless(missing)
    assert marker.args == (True,) and "nowhere" in marker.kwargs["reason"]


def test_a_named_shared_folder_comes_first(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    (tmp_path / "corpus").mkdir()
    monkeypatch.setenv("PERSONA_DRIFT_SHARED", str(tmp_path))
    assert peers.require(peers.peer("corpus")) == tmp_path / "corpus"
