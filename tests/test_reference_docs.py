"""docs/reference.md documents every setting and every per-agent key (so the page cannot fall behind): the
settings table is generated from the model (``make reference``) and must match it."""

from __future__ import annotations

import re

from engine.models import AgentConfig
from engine.settings import REPO_ROOT, Settings, variable
from ops.reference import BEGIN, END, rendered, settings_table

PAGE = (REPO_ROOT / "docs" / "reference.md").read_text(encoding="utf-8")
DOCUMENTED = set(re.findall(r"^\| `([A-Za-z_]+)` \|", PAGE, flags=re.MULTILINE))


def test_the_settings_table_is_the_one_generated_from_the_model() -> None:
    assert rendered(PAGE) == PAGE, "docs/reference.md is stale: run `make reference`"


def test_every_setting_has_its_environment_variable_documented() -> None:
    assert {variable(name) for name in Settings.model_fields} - DOCUMENTED == set()


def test_every_setting_has_a_docstring_and_its_bounds_in_the_table() -> None:
    assert [name for name, field in Settings.model_fields.items() if not field.description] == []
    table = settings_table()
    assert "| `DRIFT_WEB_PORT` | `6066` | whole number ≥ 1, ≤ 65535 |" in table
    assert "| `DRIFT_JUDGE_DEADLINE_S` | `5` | finite number > 0 |" in table
    assert "`none`, `gzip`, `snappy`, `lz4`, `zstd`" in table
    assert PAGE.count(BEGIN) == PAGE.count(END) == 1


def test_every_per_agent_key_is_documented() -> None:
    assert set(AgentConfig.model_fields) - DOCUMENTED == set()


def test_no_variable_or_key_is_documented_twice() -> None:
    rows = re.findall(r"^\| `([A-Za-z_]+)` \|", PAGE, flags=re.MULTILINE)
    assert sorted({name for name in rows if rows.count(name) > 1}) == []
