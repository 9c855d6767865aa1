"""How ``--help`` shows options: the fixes every command needs, applied once where the app is built.

Typer ≥ 0.22 prints a type column for every parameter, flags included: ``--verbose <bool>`` reads as if the
flag took a value (``--verbose true``), which it does not. A flag (``--json``, ``--sinks/--no-sinks``,
``--help``) takes no value, so it shows no type; options that take a value keep theirs (``<int range>``).
"""

from __future__ import annotations

from typing import Any

_PATCHED = "_drift_flags_without_type"


def flags_without_type() -> None:
    """Make Typer's help print no type for flags (idempotent)."""
    from typer import core

    option = core.TyperOption
    if getattr(option, _PATCHED, False):
        return
    original = option.display_type_rich

    def display_type_rich(self: Any, ctx: Any) -> str | None:
        if self.is_flag and self.metavar is None:
            return None
        result: str | None = original(self, ctx)
        return result

    option.display_type_rich = display_type_rich  # type: ignore[method-assign]
    setattr(option, _PATCHED, True)
