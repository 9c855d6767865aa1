"""The run summary: per oracle k of n, the exact posterior and its interval, calibration, and per axis value.

``by_axis`` answers *which* variants break the persona: for every axis, the variants are grouped by value
(categorical axes) or by quartile of the sampled values (continuous axes, bins ``[low, high]``) and each
group gets its own k, n and posterior under the same prior, so a value whose interval sits below the
overall rate is a provocation the target handles worse.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from engine.formats.metareason import model as m
from engine.formats.metareason.sampling import Variant
from engine.formats.metareason.statistics import inference_note, posterior, probability_within
from engine.formats.results import ItemResult, ItemScore

QUANTILE_BINS = 4


def summarize(
    family: m.PromptFamily, every: Sequence[Variant], items: Sequence[ItemResult], *, resumed: int = 0
) -> dict[str, Any]:
    answered = [(v, i) for v, i in zip(every, items, strict=True) if i.error is None]
    config = family.statistical_config
    return {
        "family": family.prompt_id,
        "variants": len(items),
        "answered": len(answered),
        "target_errors": len(items) - len(answered),
        "resumed": resumed,
        "cached_answers": sum(1 for _, i in answered if i.details.get("cached")),
        "sampling": {**family.sampling.model_dump(), "n": len(items)},
        "prior": config.prior.model_dump(),
        "inference": inference_note(config),
        "primary_model_in_file": family.primary_model.model_dump() if family.primary_model else None,
        "oracles": {name: _oracle(family, name, spec, answered) for name, spec in family.oracles.items()},
    }


def _score(item: ItemResult, name: str) -> ItemScore | None:
    return next((s for s in item.scores if s.name == name), None)


def _oracle(
    family: m.PromptFamily, name: str, spec: Any, answered: Sequence[tuple[Variant, ItemResult]]
) -> dict[str, Any]:
    rows = [(v, s) for v, i in answered if (s := _score(i, name)) is not None]
    k = sum(1 for _, s in rows if s.passed)
    post = posterior(k, len(rows), family.statistical_config)
    entry: dict[str, Any] = {"type": spec.type, "errors": sum(1 for _, s in rows if s.error), **post.as_dict()}
    if hasattr(spec, "threshold"):
        entry["threshold"] = spec.threshold
    if isinstance(spec, m.StatisticalCalibrationOracle):
        entry["calibration"] = _calibration(spec, post)
    entry["by_axis"] = {axis: _groups(family, axis, rows) for axis in family.axis_map}
    return entry


def _calibration(spec: m.StatisticalCalibrationOracle, post: Any) -> dict[str, Any]:
    seen = post.n > 0  # with no sample the posterior is the prior: nothing was observed
    gap = abs(post.mean - spec.expected_confidence) if seen else None
    enough = post.n >= spec.min_samples
    return {
        "expected_confidence": spec.expected_confidence,
        "tolerance": spec.tolerance,
        "observed": post.mean if seen else None,
        "gap": gap,
        "calibrated": (gap <= spec.tolerance) if enough and gap is not None else None,
        "probability_within_tolerance": probability_within(post, spec.expected_confidence, spec.tolerance),
        "min_samples": spec.min_samples,
        "calibration_method": spec.calibration_method,
        "method_note": "one expected confidence per family: compared directly, nothing is fitted"
        if spec.calibration_method
        else None,
    }


def _groups(family: m.PromptFamily, axis: str, rows: Sequence[tuple[Variant, ItemScore]]) -> list[dict[str, Any]]:
    spec = family.axis_map[axis]
    if isinstance(spec, m.CategoricalAxis):
        labels = {str(value): [s for v, s in rows if v.params[axis] == value] for value in spec.values}
    else:
        labels = _bins(axis, rows)
    out = []
    for label, scores in labels.items():
        if scores:
            k = sum(1 for s in scores if s.passed)
            post = posterior(k, len(scores), family.statistical_config)
            out.append({"value": label, **post.as_dict()})
    return out


def _bins(axis: str, rows: Sequence[tuple[Variant, ItemScore]]) -> dict[str, list[ItemScore]]:
    if not rows:
        return {}
    values = np.array([float(v.params[axis]) for v, _ in rows])
    edges = np.unique(np.quantile(values, np.linspace(0.0, 1.0, QUANTILE_BINS + 1)))
    if len(edges) < 2:
        return {f"[{edges[0]:.4g}, {edges[0]:.4g}]": [s for _, s in rows]}
    slots = np.clip(np.searchsorted(edges, values, side="right") - 1, 0, len(edges) - 2)
    groups: dict[str, list[ItemScore]] = {f"[{edges[i]:.4g}, {edges[i + 1]:.4g}]": [] for i in range(len(edges) - 1)}
    names = list(groups)
    for slot, (_, score) in zip(slots.tolist(), rows, strict=True):
        groups[names[slot]].append(score)
    return groups
