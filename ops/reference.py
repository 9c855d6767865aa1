"""The settings table of docs/reference.md, generated from :class:`engine.settings.Settings`.

One row per field: its variable, its default, the values it accepts (from the model's JSON Schema, so the bounds
shown are the bounds checked) and its docstring. ``python -m ops.reference`` (``make reference``) rewrites the
table between the two markers; ``tests/test_reference_docs.py`` fails when the page is stale.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from engine.settings import Settings, variable

PAGE = Path(__file__).resolve().parent.parent / "docs" / "reference.md"
BEGIN = "<!-- settings table: generated from engine/settings.py by `make reference`; do not edit by hand -->"
END = "<!-- end of the settings table -->"

#: defaults that say more than the value (computed at run time, or empty with a meaning)
SHOWN_DEFAULTS = {
    "database_url": "empty: the embedded database of `drift up`",
    "data_dir": "`$XDG_STATE_HOME/persona-drift`",
    "propositions_dir": "the bundled `propositions/`",
    "judge": "empty: `anthropic` with a key, else `offline`",
    "prices_file": "empty: the bundled table",
    "actor": "empty: `anthropic` with a key, else `scripted`",
}


#: what a field accepts beyond its JSON Schema (a validator's check)
SHOWN_ACCEPTS = {"eval_cron": "a crontab expression (minute hour day month weekday)"}


def _default(name: str, value: Any) -> str:
    if name in SHOWN_DEFAULTS:
        return SHOWN_DEFAULTS[name]
    if value is None:
        return "unset"
    if value == "":
        return "empty"
    if isinstance(value, bool):
        return f"`{str(value).lower()}`"
    if isinstance(value, float):
        return f"`{value:g}`"
    return f"`{value}`"


def _number(schema: dict[str, Any]) -> str:
    kind = "whole number" if schema["type"] == "integer" else "finite number"
    bounds = [
        f"{sign} {schema[key]:.15g}"
        for key, sign in (("exclusiveMinimum", ">"), ("minimum", "≥"), ("exclusiveMaximum", "<"), ("maximum", "≤"))
        if key in schema
    ]
    return f"{kind} {', '.join(bounds)}".strip()


_KINDS = {"boolean": "`true` / `false` (also `1`/`0`, `yes`/`no`)", "password": "secret text", "path": "a path"}


def _accepts(schema: dict[str, Any]) -> str:
    if "anyOf" in schema:
        kinds = [_accepts(s) for s in schema["anyOf"] if s.get("type") != "null"]
        return " or ".join(kinds) + " (or unset)"
    if "enum" in schema:
        return ", ".join(f"`{choice}`" for choice in schema["enum"])
    if schema.get("type") in ("integer", "number"):
        return _number(schema)
    kind = _KINDS.get(schema.get("format") or schema.get("type") or "")
    if kind:
        return kind
    if "pattern" in schema:
        return f"1 to {schema['maxLength']} of `A-Z a-z 0-9 . _ -`"
    return "non-empty text" if schema.get("minLength") else "text"


def settings_table() -> str:
    """The Markdown table, one row per :class:`Settings` field, in declaration order."""
    properties = Settings.model_json_schema(by_alias=False)["properties"]
    lines = ["| variable | default | accepts | meaning |", "|---|---|---|---|"]
    for name, field in Settings.model_fields.items():
        meaning = " ".join((field.description or "").split()).replace("|", "\\|")
        accepts = SHOWN_ACCEPTS.get(name) or _accepts(properties[name])
        lines.append(f"| `{variable(name)}` | {_default(name, field.default)} | {accepts} | {meaning} |")
    return "\n".join(lines)


def rendered(page: str) -> str:
    """``page`` with the table between the markers replaced by :func:`settings_table`."""
    head, begin, rest = page.partition(BEGIN)
    _, end, tail = rest.partition(END)
    if not begin or not end:
        raise SystemExit(f"{PAGE}: the settings table markers are missing")
    return f"{head}{BEGIN}\n{settings_table()}\n{END}{tail}"


def main() -> int:
    page = PAGE.read_text(encoding="utf-8")
    new = rendered(page)
    if new != page:
        PAGE.write_text(new, encoding="utf-8")
        print(f"updated {PAGE}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
