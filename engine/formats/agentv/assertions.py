"""4.x deterministic assertions on the final answer: ``contains`` (and ``-any`` / ``-all``, case-insensitive
``icontains…``), ``starts-with``, ``ends-with``, ``equals`` (both trimmed), ``regex`` (``value`` with optional
``flags`` among ``i``, ``m``, ``s``), ``is-json``. Each scores 1 or 0 with one hit or miss, as ``agentv`` 4.x."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

import orjson

from engine.formats.agentv.model import EvaluatorSpec
from engine.formats.agentv.scoring import EvaluatorResult, failed, result

_FLAGS = {"i": re.IGNORECASE, "m": re.MULTILINE, "s": re.DOTALL}


def _values(spec: EvaluatorSpec) -> list[str]:
    value = spec.config.get("value")
    return [str(v) for v in value] if isinstance(value, list) else [str(value)]


def _contains(output: str, values: Sequence[str], fold: bool, need_all: bool) -> tuple[bool, str]:
    text = output.lower() if fold else output
    found = [v for v in values if (v.lower() if fold else v) in text]
    suffix = " (case-insensitive)" if fold else ""
    if need_all:
        missing = [v for v in values if v not in found]
        if not missing:
            return True, f"Output contains all {len(values)} expected strings{suffix}"
        return False, f"Output missing{suffix}: " + ", ".join(f'"{v}"' for v in missing)
    ok = bool(found)
    if len(values) == 1:
        return ok, f'Output {"contains" if ok else "does not contain"} "{values[0]}"{suffix}'
    listed = ", ".join(f'"{v}"' for v in values)
    return ok, (f'Output contains "{found[0]}"{suffix}' if ok else f"Output does not contain any of: {listed}{suffix}")


def _regex(output: str, spec: EvaluatorSpec) -> tuple[bool, str]:
    pattern = str(spec.config.get("value", ""))
    flags_text = str(spec.config.get("flags") or "")
    flags = 0
    for letter in flags_text:
        flags |= _FLAGS.get(letter, 0)
    ok = re.search(pattern, output, flags) is not None
    return ok, f"Output {'matches' if ok else 'does not match'} pattern /{pattern}/{flags_text}"


def _is_json(output: str) -> tuple[bool, str]:
    try:
        orjson.loads(output)
    except orjson.JSONDecodeError:
        return False, "Output is not valid JSON"
    return True, "Output is valid JSON"


def string_assertion(spec: EvaluatorSpec, output: str) -> EvaluatorResult:
    if spec.type != "is_json" and spec.config.get("value") is None:
        return failed(spec, f"{spec.type.replace('_', '-')} needs a 'value'")
    values = _values(spec)
    first = values[0]
    checks: dict[str, Callable[[], tuple[bool, str]]] = {
        "starts_with": lambda: (output.strip().startswith(first.strip()), f'Output starts with "{first}"'),
        "ends_with": lambda: (output.strip().endswith(first.strip()), f'Output ends with "{first}"'),
        "equals": lambda: (output.strip() == first.strip(), f'Output equals "{first}"'),
        "regex": lambda: _regex(output, spec),
        "is_json": lambda: _is_json(output),
    }
    if spec.type in checks:
        ok, line = checks[spec.type]()
    else:
        ok, line = _contains(output, values, spec.type.startswith("i"), spec.type.endswith("_all"))
    return result(spec, 1.0, (line,)) if ok else result(spec, 0.0, (), (line,))
