"""Claim templates: ``{{agent_name}}``, ``{{action}}``, ``{{channel_name}}``, ``{{recipient_name}}``.

Filling is a single pass: a value that itself contains ``{{...}}`` is inserted verbatim, never expanded.
Unknown variables, and known ones without a (non-empty) value, stay exactly as written.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

#: The variables a claim may use.
TEMPLATE_VARIABLES: tuple[str, ...] = ("agent_name", "action", "channel_name", "recipient_name")

_PLACEHOLDER = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}")


def render_claim(claim: str, variables: Mapping[str, str]) -> str:
    """``claim`` with every known, valued placeholder replaced by its value."""

    def fill(match: re.Match[str]) -> str:
        name = match.group(1)
        value = variables.get(name) if name in TEMPLATE_VARIABLES else None
        return value if value else match.group(0)

    return _PLACEHOLDER.sub(fill, claim)


def placeholders(text: str) -> tuple[str, ...]:
    """The variable names used in ``text``, in order of first use."""
    return tuple(dict.fromkeys(match.group(1) for match in _PLACEHOLDER.finditer(text)))


def unknown_placeholders(text: str) -> tuple[str, ...]:
    """The variable names in ``text`` that are not template variables (they would be left as written)."""
    return tuple(name for name in placeholders(text) if name not in TEMPLATE_VARIABLES)
