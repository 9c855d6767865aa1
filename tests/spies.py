"""A spy on a module's function: the calls it gets, and the real function still answering them."""

from __future__ import annotations

from types import ModuleType
from typing import Any

import pytest


def calls_of(monkeypatch: pytest.MonkeyPatch, module: ModuleType, name: str) -> list[tuple[Any, ...]]:
    """Replace ``module.name`` (for the test) with a wrapper that records each call's positional arguments and
    returns what the real function returns; the list of the recorded calls."""
    real = getattr(module, name)
    calls: list[tuple[Any, ...]] = []

    def spy(*args: Any) -> Any:
        calls.append(args)
        return real(*args)

    monkeypatch.setattr(module, name, spy)
    return calls
