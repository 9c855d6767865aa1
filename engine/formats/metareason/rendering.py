"""Prompt templates: Jinja2's sandboxed environment with strict undefined variables, nothing else.

Templates come from user files, so they are compiled only in :class:`jinja2.sandbox.SandboxedEnvironment`
(attribute access to internals such as ``__class__`` or ``__globals__`` raises a security error) with
:class:`jinja2.StrictUndefined` (a variable that is not an axis fails instead of rendering as an empty string).
Autoescaping is off (prompts are plain text) and a trailing newline is kept as written.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import lru_cache
from typing import Any

from jinja2 import StrictUndefined, Template, TemplateError, meta
from jinja2.sandbox import SandboxedEnvironment

from engine.errors import ConfigurationError


class TemplateProblem(ConfigurationError):
    """A template that does not parse or does not render; ``line`` is the line inside the template."""

    def __init__(self, message: str, line: int | None = None) -> None:
        self.line = line
        super().__init__(message)


@lru_cache(maxsize=1)
def environment() -> SandboxedEnvironment:
    return SandboxedEnvironment(undefined=StrictUndefined, autoescape=False, keep_trailing_newline=True)


def variables(source: str) -> frozenset[str]:
    """The undeclared variables of ``source`` (``{{ x }}``, ``{{x|upper}}``, ``{% if x %}`` …)."""
    try:
        return frozenset(meta.find_undeclared_variables(environment().parse(source)))
    except TemplateError as exc:
        raise TemplateProblem(f"template syntax error: {exc.message}", getattr(exc, "lineno", None)) from None


@lru_cache(maxsize=64)
def compile_template(source: str) -> Template:
    try:
        return environment().from_string(source)
    except TemplateError as exc:
        raise TemplateProblem(f"template syntax error: {exc.message}", getattr(exc, "lineno", None)) from None


def render(template: Template, params: Mapping[str, Any]) -> str:
    """The prompt for one variant; a sandbox violation or an undefined name is a :class:`TemplateProblem`."""
    try:
        return template.render(params)
    except TemplateError as exc:
        raise TemplateProblem(f"template cannot be rendered: {type(exc).__name__}: {exc.message}") from None
