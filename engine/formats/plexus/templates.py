"""Prompt templates of Plexus nodes: Jinja2 in a sandbox over the score's state.

The state offers ``text``, ``metadata``, ``results`` (``results["Score Name"].value``), the latest node's
``classification`` / ``explanation``, every earlier node's fields under its name and every output alias.
Undefined names are errors (StrictUndefined): a prompt never silently loses a field.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

from jinja2 import StrictUndefined, TemplateError
from jinja2.sandbox import SandboxedEnvironment


class TemplateProblem(ValueError):
    """A template could not be compiled or rendered."""


@functools.cache
def environment() -> SandboxedEnvironment:
    return SandboxedEnvironment(undefined=StrictUndefined, autoescape=False, keep_trailing_newline=True)


def syntax_error(source: str) -> tuple[int, str] | None:
    """``(line within the template, message)`` when ``source`` does not compile, else None."""
    try:
        environment().parse(source)
    except TemplateError as exc:
        return getattr(exc, "lineno", 1) or 1, exc.message or str(exc)
    return None


@functools.lru_cache(maxsize=512)
def _compiled(source: str) -> Any:
    return environment().from_string(source)


def render(source: str, state: Mapping[str, Any]) -> str:
    if "{" not in source:
        return source
    try:
        return str(_compiled(source).render(dict(state)))
    except TemplateError as exc:
        raise TemplateProblem(f"template error: {exc.message or exc}") from exc
