"""Validating a parsed YAML document against a pydantic model and turning every failure into a FileIssue.

Messages name the offending field and, where it helps, suggest the closest allowed key or value
(``unknown key 'wieght'; did you mean 'weight'?``).
"""

from __future__ import annotations

import types
import typing
from enum import Enum
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError
from pydantic_core import ErrorDetails

from engine.errors import FileIssue
from engine.propositions.models import suggestion
from engine.propositions.yamlsource import Document, FieldPath

M = TypeVar("M", bound=BaseModel)

_VALUE_ERROR_PREFIX = "Value error, "


def validate_document(document: Document, model: type[M], what: str = "file") -> tuple[M | None, list[FileIssue]]:
    """Validate ``document.data`` as ``model``; return the instance or None and every issue found."""
    if document.issues:
        return None, list(document.issues)
    if document.data is None:
        return None, [document.issue((), f"the {what} is empty")]
    if not isinstance(document.data, dict):
        kind = _type_name(document.data)
        return None, [document.issue((), f"the top level must be a mapping of keys, not a {kind}")]
    try:
        return model.model_validate(document.data), []
    except ValidationError as exc:
        return None, _most_precise([_issue(document, model, error) for error in exc.errors(include_url=False)])


def _most_precise(issues: list[FileIssue]) -> list[FileIssue]:
    """One issue per field; a union's "wrong type" at ``a`` gives way to its member's finding at ``a.0``."""
    paths = {issue.path for issue in issues}
    kept: dict[str, FileIssue] = {}
    for issue in issues:
        deeper = any(other.startswith(f"{issue.path}.") for other in paths) if issue.path else False
        if not deeper:
            kept.setdefault(issue.path, issue)
    return list(kept.values())


#: Names pydantic puts in an error location for the member of a union that failed (not keys of the file).
_UNION_MEMBERS = frozenset({"str", "int", "float", "bool", "none", "list", "dict", "tuple"})


def data_path(data: Any, loc: tuple[int | str, ...]) -> FieldPath:
    """``loc`` without the union-member tags pydantic adds (``skills.tuple[...].0`` → ``skills.0``)."""
    path: list[int | str] = []
    for part in loc:
        present = (isinstance(data, dict) and part in data) or (
            isinstance(data, list) and isinstance(part, int) and 0 <= part < len(data)
        )
        if present:
            data = data[part]
        elif isinstance(part, str) and ("[" in part or part in _UNION_MEMBERS):
            continue
        else:
            data = None
        path.append(part)
    return tuple(path)


def _issue(document: Document, model: type[BaseModel], error: ErrorDetails) -> FileIssue:
    path: FieldPath = data_path(document.data, tuple(error["loc"]))
    kind = error["type"]
    if kind == "missing":
        return document.issue(path, "required key is missing")
    if kind == "extra_forbidden":
        key = str(path[-1])
        allowed = allowed_keys(model, path)
        hint = suggestion(key, allowed) or f"; allowed keys: {', '.join(allowed)}"
        return document.issue(path, f"unknown key '{key}'{hint}")
    message = error["msg"].removeprefix(_VALUE_ERROR_PREFIX)
    if kind == "enum" and isinstance(error.get("input"), str):
        choices = _enum_values(model, path)
        message += suggestion(error["input"], choices).replace(";", ",", 1)
    elif kind.endswith("_type") or kind in {"finite_number", "greater_than_equal"}:
        message += f" (got {_describe(error.get('input'))})"
    return document.issue(path, message[0].lower() + message[1:] if message else "invalid value")


def allowed_keys(model: type[BaseModel], path: FieldPath) -> tuple[str, ...]:
    """The keys allowed in the mapping that holds ``path[-1]`` (following nested models through lists)."""
    current = _model_at(model, path[:-1])
    return tuple(current.model_fields) if current is not None else ()


def _model_at(model: type[BaseModel], path: FieldPath) -> type[BaseModel] | None:
    current: type[BaseModel] | None = model
    for part in path:
        if isinstance(part, int):
            continue
        if current is None or part not in current.model_fields:
            return None
        current = _nested(current.model_fields[part].annotation, BaseModel)
    return current


def _enum_values(model: type[BaseModel], path: FieldPath) -> tuple[str, ...]:
    parent = _model_at(model, path[:-1])
    if parent is None or not path or str(path[-1]) not in parent.model_fields:
        return ()
    enum_type = _nested(parent.model_fields[str(path[-1])].annotation, Enum)
    return tuple(str(member.value) for member in enum_type) if enum_type is not None else ()


T = TypeVar("T")


def _nested(annotation: Any, base: type[T]) -> type[T] | None:
    """The first class deriving from ``base`` inside ``annotation`` (through tuple[...], X | None, ...)."""
    if isinstance(annotation, type) and issubclass(annotation, base):
        return annotation
    if isinstance(annotation, types.UnionType) or typing.get_origin(annotation) is not None:
        for arg in typing.get_args(annotation):
            found = _nested(arg, base)
            if found is not None:
                return found
    return None


def _type_name(value: Any) -> str:
    names = {dict: "mapping", list: "list", str: "string", bool: "boolean", int: "integer", float: "number"}
    if value is None:
        return "null"
    return names.get(type(value), type(value).__name__)


def _describe(value: Any) -> str:
    """A short, safe description of a bad input value: its YAML type and, when small, the value."""
    kind = _type_name(value)
    if isinstance(value, bool) or value is None:
        return kind if value is None else f"{kind} {str(value).lower()}"
    if isinstance(value, int) and value.bit_length() > 64:
        return f"a {value.bit_length()}-bit {kind}"
    if isinstance(value, int | float | str):
        text = repr(value)
        return f"{kind} {text if len(text) <= 40 else text[:37] + '...'}"
    return kind
