"""The paper's raw result files (``{"experiments": {"Control": {"results": {metric: [scores]}}, "Treatment":
…}}``) as :class:`~engine.experiments.data.ExperimentData`.

Only ``experiments.<arm>.results`` is read; the precomputed ``statistical_test_results_vs_others`` is ignored
on purpose (every statistic is computed from the raw lists). The files carry no agent ids, so their samples
have no clusters and the cluster-aware test is reported as unavailable.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from engine.errors import ConfigurationError
from engine.experiments.data import ArmSample, ExperimentData, MetricData
from engine.experiments.paper import PAPER

_COUNTS = {"ideas_qty", "opinions_qty"}
_ARMS = ("Control", "Treatment")


def metric_key(name: str) -> str:
    """``"Hard Persona Adherence"`` → ``hard_persona_adherence``; ``"Self-consistency"`` → ``self_consistency``."""
    return re.sub(r"[^a-z0-9]+", "_", name.lower()).strip("_")


def load_raw(path: Path) -> ExperimentData:
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigurationError(f"{path}: cannot read: {exc.strerror or exc}") from None
    except json.JSONDecodeError as exc:
        raise ConfigurationError(f"{path}:{exc.lineno}: not JSON: {exc.msg}") from None
    arms = _arms(document, path)
    metrics = []
    for name in arms["Control"]:
        if name not in arms["Treatment"]:
            continue
        key = metric_key(name)
        control, treatment = (_sample(arms[arm][name], path, f"{arm}.{name}") for arm in _ARMS)
        metrics.append(MetricData(key, control, treatment, "count" if key in _COUNTS else "score", name))
    if not metrics:
        raise ConfigurationError(f"{path}: Control and Treatment share no metric")
    stem = path.stem
    return ExperimentData(stem, tuple(metrics), str(path), stem if stem in PAPER else None)


def _arms(document: Any, path: Path) -> dict[str, dict[str, Any]]:
    experiments = document.get("experiments") if isinstance(document, dict) else None
    if not isinstance(experiments, dict) or not all(arm in experiments for arm in _ARMS):
        raise ConfigurationError(f"{path}: expected experiments.Control and experiments.Treatment")
    arms = {}
    for arm in _ARMS:
        results = experiments[arm].get("results") if isinstance(experiments[arm], dict) else None
        if not isinstance(results, dict):
            raise ConfigurationError(f"{path}: experiments.{arm}.results must be a mapping of metric to scores")
        arms[arm] = results
    return arms


def _sample(values: Any, path: Path, where: str) -> ArmSample:
    if not isinstance(values, list) or not all(isinstance(v, int | float) and not isinstance(v, bool) for v in values):
        raise ConfigurationError(f"{path}: experiments.{where} must be a list of numbers")
    return ArmSample(tuple(float(v) for v in values))
