"""``--raw`` on the paper's result files reproduces Table 1, and the reports render (Markdown, JSON, HTML, PNG)."""

from __future__ import annotations

import html
import json
import re
from pathlib import Path

import numpy as np
import pytest

from engine.experiments.analysis import analyse
from engine.experiments.charts import draw
from engine.experiments.paper import PAPER
from engine.experiments.raw import load_raw, metric_key
from engine.experiments.render import as_html, as_json, markdown
from tests.peers import peer, require

TABLE1 = peer("reference", "tinytroupe-table1")
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def _files() -> list[Path]:
    require(TABLE1)
    return sorted(TABLE1.glob("*.json"))


def sig3(x: float) -> float:
    return float(f"{x:.3g}")


def test_metric_keys() -> None:
    assert metric_key("Hard Persona Adherence") == "hard_persona_adherence"
    assert metric_key("Self-consistency") == "self_consistency"


def test_every_raw_file_reproduces_the_papers_means_sds_and_p_values() -> None:
    checked = 0
    for path in _files():
        data = load_raw(path)
        report = analyse(data)
        document = json.loads(path.read_text())["experiments"]
        for row in report.rows:
            raw_control = document["Control"]["results"][
                next(k for k in document["Control"]["results"] if metric_key(k) == row.metric)
            ]
            assert row.control.sd == pytest.approx(float(np.std(raw_control, ddof=1)), rel=1e-12)
            if row.paper is None:
                continue
            assert sig3(row.control.mean or 0) == sig3(row.paper.control)
            assert sig3(row.treatment.mean or 0) == sig3(row.paper.treatment)
            assert row.p is not None and sig3(row.p) == sig3(row.paper.p)
            assert row.direction_agrees is True
            checked += 1
    assert checked == sum(len(metrics) for metrics in PAPER.values())  # every published row was compared


def test_reports_render_in_every_format(tmp_path: Path) -> None:
    path = next(p for p in _files() if p.stem.startswith("debating"))
    data = load_raw(path)
    report = analyse(data)
    charts = draw(data, report, tmp_path / "charts")
    assert len(charts) == len(data.metrics) + 1
    assert all(p.read_bytes().startswith(PNG_MAGIC) for p in charts)
    body = json.loads(as_json([report]))
    (experiment,) = body["experiments"]
    metric = next(m for m in experiment["metrics"] if m["metric"] == "hard_persona_adherence")
    assert set(metric["control"]) == {"n", "mean", "sd"} and metric["control"]["n"] == 120
    assert metric["paper"] == {"control": 6.158, "treatment": 6.625, "p": 0.0148}
    assert metric["direction_agrees"] is True
    page = as_html([report], {data.name: charts})
    assert page.count("data:image/png;base64,") == len(charts)
    text = markdown([report])
    assert "| Hard Persona Adherence | 6.16 ± " in text


def _raw_file(tmp_path: Path, names: list[str]) -> Path:
    """A raw result file in the paper's shape, built here (two arms, 30 scores a metric)."""
    rng = np.random.default_rng(7)
    arms = {
        arm: {"results": {name: [int(x) for x in rng.integers(1, 10, 30) + shift] for name in names}}
        for arm, shift in (("Control", 0), ("Treatment", 1))
    }
    path = tmp_path / "pipes.json"
    path.write_text(json.dumps({"experiments": arms}), encoding="utf-8")
    return path


def _table_rows(page: str) -> list[list[str]]:
    table = page[page.index("<table>") : page.index("</table>")]
    return [
        [html.unescape(c) for c in re.findall(r"<t[dh]>(.*?)</t[dh]>", row)]
        for row in re.findall(r"<tr>(.*?)</tr>", table)
    ]


def test_a_metric_name_with_a_pipe_or_markup_keeps_its_row_in_html_and_markdown(tmp_path: Path) -> None:
    names = ["Hard Persona Adherence", "Fluency | rate", "<b>Bold</b> & co"]
    report = analyse(load_raw(_raw_file(tmp_path, names)))
    rows = _table_rows(as_html([report]))
    assert [len(r) for r in rows] == [13] * 4
    assert [r[0] for r in rows[1:]] == names
    assert "<b>Bold</b>" not in as_html([report])  # escaped, never markup
    lines = [line for line in markdown([report]).splitlines() if line.startswith("| ")]
    split = [[c for c in re.split(r"(?<!\\)\|", line)[1:-1]] for line in lines]
    assert [len(c) for c in split] == [13] * 4
    assert split[2][0].strip() == r"Fluency \| rate"
