"""Stored experiment rows as report input (no database needed)."""

from __future__ import annotations

from streams.store_experiments import StoredExperiment, experiment_data


def test_stored_rows_become_report_samples_clustered_by_persona() -> None:
    stored = StoredExperiment("x1", "debate-controversial", "debating_quantitative_experimentation_1c", "partial",
                              {"actor": "scripted:actor", "judge": "scripted:rules", "scale": 0.05}, 1)  # fmt: skip
    rows = [
        {"metric": "opinions_qty", "arm": "control", "value": 4, "cluster": "g1"},
        {"metric": "self_consistency", "arm": "treatment", "value": 6.5, "cluster": "p01"},
        {"metric": "self_consistency", "arm": "control", "value": 5.0, "cluster": "p01"},
        {"metric": "self_consistency", "arm": "control", "value": 4.0, "cluster": "p02"},
    ]
    data = experiment_data(stored, rows, ["hard_persona_adherence", "self_consistency", "opinions_qty"])
    assert [m.metric for m in data.metrics] == ["self_consistency", "opinions_qty"]  # the scenario's order
    consistency, opinions = data.metrics
    assert consistency.control.values == (5.0, 4.0) and consistency.control.clusters == ("p01", "p02")
    assert consistency.treatment.values == (6.5,) and consistency.kind == "score"
    assert opinions.kind == "count" and opinions.treatment.values == ()
    assert data.paper_key == "debating_quantitative_experimentation_1c"
    assert "partial" in data.source and "scripted:actor" in data.source and "scripted:rules" in data.source
