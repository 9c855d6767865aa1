"""PNG charts of an experiment with matplotlib (Agg, no display): per metric, the control and treatment
distributions as box plots with every value jittered on top; per experiment, a forest plot of Cohen's d with
its 95 % interval."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import numpy as np

from engine.experiments.analysis import ExperimentReport
from engine.experiments.data import ExperimentData


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def draw(data: ExperimentData, report: ExperimentReport, directory: Path) -> list[Path]:
    """Write the charts of one experiment into ``directory``; return their paths (distributions, then forest)."""
    directory.mkdir(parents=True, exist_ok=True)
    plt = _pyplot()
    paths = [_distribution(plt, data, metric_index, directory) for metric_index in range(len(data.metrics))]
    paths.append(_forest(plt, report, directory / f"{data.name}-cohens-d.png"))
    return paths


def _distribution(plt: Any, data: ExperimentData, index: int, directory: Path) -> Path:
    metric = data.metrics[index]
    samples = [np.asarray(metric.control.values), np.asarray(metric.treatment.values)]
    fig, ax = plt.subplots(figsize=(4.2, 3.6), dpi=110)
    ax.boxplot(samples, tick_labels=["control", "treatment"], widths=0.5, showfliers=False)
    rng = np.random.default_rng(0)
    for position, values in enumerate(samples, start=1):
        jitter = rng.uniform(-0.12, 0.12, size=values.size)
        ax.scatter(position + jitter, values, s=9, alpha=0.45, color="#3366aa" if position == 1 else "#cc5533")
    ax.set_title(metric.title)
    ax.set_ylabel("count" if metric.kind == "count" else "score (0–9)")
    fig.tight_layout()
    path = directory / f"{data.name}-{metric.metric}.png"
    fig.savefig(path)
    plt.close(fig)
    return path


def _forest(plt: Any, report: ExperimentReport, path: Path) -> Path:
    rows = [r for r in report.rows if r.cohens_d is not None and r.d_interval is not None]
    fig, ax = plt.subplots(figsize=(6.0, 0.5 * max(len(rows), 2) + 1.2), dpi=110)
    for y, row in enumerate(reversed(rows)):
        assert row.d_interval is not None and row.cohens_d is not None
        ax.plot(row.d_interval, [y, y], color="#555555")
        ax.plot([row.cohens_d], [y], "o", color="#cc5533")
    ax.axvline(0.0, color="#999999", linestyle="--", linewidth=1)
    ax.set_yticks(range(len(rows)), [r.title for r in reversed(rows)])
    ax.set_xlabel("Cohen's d (treatment − control), 95% interval")
    ax.set_title("\n".join(textwrap.wrap(report.name, 60)), fontsize=8)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return path
