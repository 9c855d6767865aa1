from __future__ import annotations

from pathlib import Path

import pytest

from engine.errors import ConfigurationError
from engine.models import TokenUsage
from engine.pricing import PriceTable, format_cost

USAGE = TokenUsage(input_tokens=2_000_000, output_tokens=100_000, cache_read_input_tokens=1_000_000)


def test_a_bundled_model_costs_its_list_price_with_cache_reads() -> None:
    table = PriceTable.load(None)
    # 2 M input at $1, 0.1 M output at $5, 1 M cache reads at $0.10
    assert table.cost("anthropic:claude-haiku-4-5", USAGE) == pytest.approx(2.0 + 0.5 + 0.1)
    assert table.cost("claude-haiku-4-5-20251001", USAGE) == pytest.approx(2.6)  # a dated name by prefix


def test_scripted_and_offline_are_free_and_unknown_models_have_no_cost() -> None:
    table = PriceTable.load(None)
    assert table.cost("scripted:rules.yaml", USAGE) == 0.0
    assert table.cost("offline", USAGE) == 0.0
    assert table.cost("offline-heuristic (no LLM)", USAGE) == 0.0  # the offline judge's name, as /stats gives it
    assert table.cost("openai-compatible:local", USAGE) is None
    assert format_cost(None) == "unknown"


def test_a_prices_file_adds_and_overrides(tmp_path: Path) -> None:
    path = tmp_path / "prices.yaml"
    path.write_text("local: {input: 0.5, output: 1}\nclaude-haiku-4-5: {input: 2, output: 10}\n")
    table = PriceTable.load(path)
    assert table.cost("openai-compatible:local", USAGE) == pytest.approx(1.0 + 0.1)
    assert table.cost("anthropic:claude-haiku-4-5", USAGE) == pytest.approx(4.0 + 1.0)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("m: {input: 1}\n", "needs input and output"),
        ("m: {input: 1, output: -2}\n", "cannot be negative"),
        ("m: {input: 1, output: 2, typo: 3}\n", "unknown key"),
        ("- a\n", "expected a mapping"),
    ],
)
def test_bad_prices_files_are_one_line_errors(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "prices.yaml"
    path.write_text(text)
    with pytest.raises(ConfigurationError, match=message):
        PriceTable.load(path)


def test_format_cost_rounds_small_and_large_amounts() -> None:
    assert (format_cost(0.012345), format_cost(1234.5)) == ("$0.0123", "$1,234.50")
