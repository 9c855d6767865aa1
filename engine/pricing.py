"""Dollar costs of token usage: a price table per model, overridable from a YAML file.

Prices are US dollars per million tokens for input, output, cache reads and cache writes. The bundled table
holds the providers' published list prices for the models drift names by default (as published when this
table was last edited; check your provider's page) — a file named by ``DRIFT_PRICES_FILE`` adds models or
replaces entries::

    claude-haiku-4-5: {input: 1.0, output: 5.0, cache_read: 0.10, cache_write: 1.25}
    my-local-model:   {input: 0, output: 0}

Models are matched by exact name, then by the longest table key that prefixes the name (``claude-haiku-4-5``
matches ``claude-haiku-4-5-20251001``). Scripted, replay and offline judges cost nothing; an unknown model
has no cost (``None``), which outputs show as "unknown", never as 0.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import yaml

from engine.errors import ConfigurationError
from engine.models import TokenUsage

PER = 1_000_000


@dataclass(frozen=True, slots=True)
class Price:
    input: float
    output: float
    cache_read: float = 0.0
    cache_write: float = 0.0

    def cost(self, usage: TokenUsage) -> float:
        return (
            usage.input_tokens * self.input
            + usage.output_tokens * self.output
            + usage.cache_read_input_tokens * self.cache_read
            + usage.cache_creation_input_tokens * self.cache_write
        ) / PER


FREE = Price(0.0, 0.0)

BUNDLED_PRICES: Mapping[str, Price] = {
    "claude-haiku-4-5": Price(1.0, 5.0, 0.10, 1.25),
    "claude-sonnet-4-5": Price(3.0, 15.0, 0.30, 3.75),
    "claude-opus-4-1": Price(15.0, 75.0, 1.50, 18.75),
    "claude-3-5-haiku": Price(0.80, 4.0, 0.08, 1.0),
}

#: judge / actor kinds that never call a paid model
_FREE_KINDS = ("scripted", "replay", "offline", "recorded")


class PriceTable:
    def __init__(self, prices: Mapping[str, Price] = BUNDLED_PRICES) -> None:
        self._prices = dict(prices)

    @classmethod
    def load(cls, path: Path | None) -> PriceTable:
        """The bundled table, overridden by ``path`` when given."""
        table = dict(BUNDLED_PRICES)
        if path is not None:
            table.update(read_prices(path))
        return cls(table)

    def price(self, model: str) -> Price | None:
        """The price of ``model`` (a bare model name or a spec like ``anthropic:claude-haiku-4-5``)."""
        kind, _, rest = model.partition(":")
        if kind in _FREE_KINDS or kind.startswith("offline-heuristic"):  # the offline judge's name
            return FREE
        name = rest if kind in {"anthropic", "openai-compatible"} and rest else model
        if name in self._prices:
            return self._prices[name]
        prefixes = [key for key in self._prices if name.startswith(key)]
        return self._prices[max(prefixes, key=len)] if prefixes else None

    def cost(self, model: str, usage: TokenUsage) -> float | None:
        price = self.price(model)
        return None if price is None else price.cost(usage)


def read_prices(path: Path) -> dict[str, Price]:
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigurationError(f"{path}: cannot read prices: {exc.strerror or exc}") from None
    except yaml.YAMLError as exc:
        raise ConfigurationError(f"{path}: not valid YAML: {exc}") from None
    if not isinstance(data, dict):
        raise ConfigurationError(f"{path}: expected a mapping of model name to prices")
    return {str(model): _price(path, str(model), entry) for model, entry in data.items()}


def _price(path: Path, model: str, entry: object) -> Price:
    if not isinstance(entry, dict) or not {"input", "output"} <= set(entry):
        raise ConfigurationError(f"{path}: {model}: needs input and output prices (dollars per million tokens)")
    unknown = set(entry) - {"input", "output", "cache_read", "cache_write"}
    if unknown:
        raise ConfigurationError(f"{path}: {model}: unknown key(s) {', '.join(sorted(unknown))}")
    try:
        values = {key: float(value) for key, value in entry.items()}
    except (TypeError, ValueError):
        raise ConfigurationError(f"{path}: {model}: prices must be numbers") from None
    if any(v < 0 for v in values.values()):
        raise ConfigurationError(f"{path}: {model}: prices cannot be negative")
    return Price(**values)


def format_cost(cost: float | None) -> str:
    """``$0.0123`` (4 decimals below a dollar, 2 above), or ``unknown`` for a model without a price."""
    if cost is None:
        return "unknown"
    return f"${cost:.4f}" if cost < 1 else f"${cost:,.2f}"
