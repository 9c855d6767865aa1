"""``--raw`` on the paper's result files reproduces Table 1, and the reports render (Markdown, JSON, HTML, PNG)."""

from __future__ import annotations

import json
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
