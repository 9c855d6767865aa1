"""The cost benchmark's headline: ratios to TinyTroupe's strategy, plain keys at the default window."""

from __future__ import annotations

import pytest

from ops.bench.cost import MODELS, ROWS, Found, headline


def _found() -> Found:
    found: Found = {}
    for model in MODELS:
        for n, (strategy, window) in enumerate(ROWS):
            dollars = 20.0 if strategy == "tinytroupe" else 5.0 + n
            found[(model, 4, strategy, window)] = {
                "usd_per_1k_drafts": dollars, "uncached_input_per_check": 100.0 * (n + 1),
                "cacheable_share": 0.5, "p50_ms": 100.0 * (n + 1),
            }  # fmt: skip
    return found


@pytest.mark.parametrize("default", ["sliding", "hopping"])
def test_plain_keys_are_the_default_windows(default: str) -> None:
    out = headline(_found(), default)
    other = "hopping" if default == "sliding" else "sliding"
    for strategy in ("parallel", "staged"):
        plain = f"cost_sonnet_4d_{strategy}"
        assert out[f"{plain}_vs_tinytroupe"] == out[f"{plain}_{default}_vs_tinytroupe"]
        assert out[f"{plain}_vs_tinytroupe"] != out[f"{plain}_{other}_vs_tinytroupe"]
        assert out[f"{plain}_usd_per_1k_drafts"] / 20.0 == pytest.approx(out[f"{plain}_vs_tinytroupe"])
    assert out["cost_haiku_4d_tinytroupe_usd_per_1k_drafts"] == 20.0


def test_the_staged_latency_ratio_compares_the_same_window() -> None:
    found = _found()
    out = headline(found, "hopping")
    staged, parallel = (
        found[("claude-sonnet-4-5", 4, "staged", "hopping")],
        found[("claude-sonnet-4-5", 4, "parallel", "hopping")],
    )
    assert out["cost_sonnet_4d_staged_p50_vs_parallel"] == staged["p50_ms"] / parallel["p50_ms"]
