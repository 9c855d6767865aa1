"""docs/reference.md documents every setting and every per-agent key (so the page cannot fall behind)."""

from __future__ import annotations

import re
from dataclasses import fields

from engine.models import AgentConfig
from engine.settings import REPO_ROOT, Settings

PAGE = (REPO_ROOT / "docs" / "reference.md").read_text(encoding="utf-8")
DOCUMENTED = set(re.findall(r"^\| `([A-Za-z_]+)` \|", PAGE, flags=re.MULTILINE))


def test_every_setting_has_its_environment_variable_documented() -> None:
    expected = {
        "ANTHROPIC_API_KEY" if f.name == "anthropic_api_key" else f"DRIFT_{f.name.upper()}" for f in fields(Settings)
    }
    assert expected - DOCUMENTED == set()


def test_every_per_agent_key_is_documented() -> None:
    assert set(AgentConfig.model_fields) - DOCUMENTED == set()


def test_no_variable_or_key_is_documented_twice() -> None:
    rows = re.findall(r"^\| `([A-Za-z_]+)` \|", PAGE, flags=re.MULTILINE)
    assert sorted({name for name in rows if rows.count(name) > 1}) == []
