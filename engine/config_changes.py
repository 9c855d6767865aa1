"""Validation of a change to an agent's configuration (``drift config set``, replays), before any write."""

from __future__ import annotations

import difflib
from typing import Any

from pydantic import ValidationError

from engine.errors import ConfigurationError
from engine.ids import check_agent_id, shown
from engine.models import AgentConfig

CONFIG_FIELDS: tuple[str, ...] = tuple(AgentConfig.model_fields)


def check_config_keys(changes: dict[str, Any]) -> None:
    """Unknown configuration keys are errors, with a suggestion."""
    for key in changes:
        if key not in CONFIG_FIELDS:
            close = difflib.get_close_matches(key, CONFIG_FIELDS, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise ConfigurationError(f"unknown configuration key {shown(key)}{hint}")


def validated_change(agent_id: str, current: AgentConfig, changes: dict[str, Any]) -> AgentConfig:
    """``current`` with ``changes`` applied, after checking the agent id, the keys and every value's bounds.

    Raises a one-line :class:`ConfigurationError` naming the first problem; nothing has been written then.
    """
    check_agent_id(agent_id)
    check_config_keys(changes)
    try:
        return current.with_changes(changes)
    except ValidationError as exc:
        first = exc.errors()[0]
        field = ".".join(str(p) for p in first["loc"])
        value = shown(str(first.get("input", "")))
        raise ConfigurationError(f"invalid configuration for {agent_id}: {field} = {value}: {first['msg']}") from None
