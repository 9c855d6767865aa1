"""``drift config set`` on bad input: one line, exit 2, nothing written (issue 20, point 5)."""

from __future__ import annotations

import asyncio
import os
import subprocess
from pathlib import Path

import pytest

from engine.config_changes import validated_change
from engine.errors import ConfigurationError
from engine.ids import MAX_ID_CHARS
from engine.models import AgentConfig
from streams.store import Store
from streams.wire.payloads import Draft
from tests.stack import DRIFT, Stack

pytestmark = pytest.mark.e2e


def _drift(stack: Stack, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("DRIFT_")}
    env["DRIFT_DATABASE_URL"] = stack.database.url
    env["DRIFT_BROKER"] = stack.broker.bootstrap
    return subprocess.run([DRIFT, *args], env=env, capture_output=True, text=True, timeout=60, check=False)


def _stored(stack: Stack, agent_id: str) -> tuple[int, int]:
    """(agents rows, agent_evaluation_config rows) for ``agent_id``."""

    async def go() -> tuple[int, int]:
        async with await Store.connect(stack.database.url) as store:
            agents = await store.pool.fetchval("SELECT count(*) FROM agents WHERE id = $1", agent_id)
            configs = await store.pool.fetchval(
                "SELECT count(*) FROM agent_evaluation_config WHERE agent_id = $1", agent_id
            )
            return int(agents), int(configs)

    return asyncio.run(go())


def _assert_one_line_error(result: subprocess.CompletedProcess[str], *fragments: str) -> None:
    assert result.returncode == 2, result.stderr
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("drift: "), result.stderr[:2000]
    assert len(lines[0]) < 300  # a 100 KB id is not echoed back
    assert "Traceback" not in result.stderr and result.stdout == ""
    for fragment in fragments:
        assert fragment in lines[0]


def test_a_value_beyond_its_column_is_refused_before_any_write(stack: Stack) -> None:
    agent = "config-bounds-agent"
    result = _drift(stack, "config", "set", agent, "variety_message_threshold=1099511627776")
    _assert_one_line_error(result, "variety_message_threshold", "less than or equal to 1000")
    assert _stored(stack, agent) == (0, 0)


@pytest.mark.parametrize(
    ("agent", "fragment"),
    [("", "must not be empty"), ("a" * 129, "at most 128 characters, got 129"),
     ("b" * 100 * 1024, "got 102400"), ("line\nbreak", "control characters")],
    ids=["empty", "129-chars", "100-KB", "newline"],
)  # fmt: skip
def test_a_bad_agent_id_is_refused_before_any_write(stack: Stack, agent: str, fragment: str) -> None:
    result = _drift(stack, "config", "set", agent, "gate_adherence_enabled=true")
    _assert_one_line_error(result, "agent id", fragment)
    assert _stored(stack, agent) == (0, 0)


def test_the_store_checks_the_id_and_values_before_writing_too(stack: Stack) -> None:
    async def go() -> None:
        async with await Store.connect(stack.database.url) as store:
            with pytest.raises(ConfigurationError, match="at most 128"):
                await store.set_config("c" * 129, {"gate_enabled": False})
            with pytest.raises(ConfigurationError, match="minimum_required_qty_of_actions"):
                await store.set_config("config-store-agent", {"minimum_required_qty_of_actions": 2**31})

    asyncio.run(go())
    assert _stored(stack, "c" * 129) == (0, 0)
    assert _stored(stack, "config-store-agent") == (0, 0)


def test_a_valid_change_at_the_limits_is_stored(stack: Stack) -> None:
    agent = "x" * MAX_ID_CHARS
    result = _drift(stack, "config", "set", agent, "variety_message_threshold=1000", "max_correction_attempts=20")
    assert result.returncode == 0, result.stderr
    assert _stored(stack, agent) == (1, 1)


def test_the_id_rule_is_the_wire_rule() -> None:
    """The wire accepts exactly the lengths `config set` accepts, so every agent that drafts can be configured."""
    for length in (1, MAX_ID_CHARS):
        Draft(draft_id="d", agent_id="a" * length, text="hi")
        validated_change("a" * length, AgentConfig(), {})
    with pytest.raises(ValueError, match="at most 128"):
        Draft(draft_id="d", agent_id="a" * (MAX_ID_CHARS + 1), text="hi")


_COLUMN_TYPES = {"integer": (-(2**31), 2**31 - 1), "real": (-3.4e38, 3.4e38), "double": (-1.7e308, 1.7e308)}
MIGRATIONS = Path(__file__).resolve().parents[3] / "streams" / "store" / "migrations"


def test_every_numeric_field_has_bounds_that_fit_its_column() -> None:
    sql = (MIGRATIONS / "001_initial.sql").read_text()
    table = sql[sql.index("CREATE TABLE IF NOT EXISTS agent_evaluation_config") :].split(");", 1)[0]
    columns = {line.split()[0]: line.split()[1] for line in table.splitlines()[1:] if line.strip()}
    for line in (MIGRATIONS / "009_double_precision.sql").read_text().splitlines():  # real -> double precision
        if "ALTER COLUMN" in line and line.split()[2] in columns:
            columns[line.split()[2]] = line.split()[4]
    for line in (MIGRATIONS / "011_monitor.sql").read_text().splitlines():  # the monitor's keys (issue 27)
        words = line.split()
        if "ADD COLUMN IF NOT EXISTS" in line and words[6] == "double":
            columns[words[5]] = "double"
    for name, field in AgentConfig.model_fields.items():
        if field.annotation is bool or name in {"monitor_reference", "propositions", "judge"}:  # text columns
            continue
        bounds = {type(m).__name__: m for m in field.metadata}
        assert "Ge" in bounds and "Le" in bounds, f"{name} has no lower or upper bound"
        low, high = _COLUMN_TYPES[columns[name]]
        assert low <= bounds["Ge"].ge and bounds["Le"].le <= high, name
