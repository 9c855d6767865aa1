"""``drift replay`` helpers: parsing times and reading per-agent configuration files."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import orjson
import pytest
from aiokafka.structs import ConsumerRecord

from engine.errors import ConfigurationError
from streams.client.replay import Disposition, Window, changes_for, disposition, load_agent_configs, parse_time
from tests.streams.ops_cli_support import NOW, write_config

# -- time parsing and replay configuration files ------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2025-06-01T10:30:00Z", datetime(2025, 6, 1, 10, 30, tzinfo=UTC)),
        ("2025-06-01T12:30:00+02:00", datetime(2025, 6, 1, 10, 30, tzinfo=UTC)),
        ("2025-06-01T10:30:00", datetime(2025, 6, 1, 10, 30, tzinfo=UTC)),  # no offset: UTC
        ("-15m", NOW - timedelta(minutes=15)),
        ("-2h", NOW - timedelta(hours=2)),
        ("-30s", NOW - timedelta(seconds=30)),
        ("-1.5d", NOW - timedelta(hours=36)),
        ("-1w", NOW - timedelta(days=7)),
        ("now", NOW),
    ],
)
def test_parse_time_reads_rfc3339_and_relative_times(text: str, expected: datetime) -> None:
    assert parse_time(text, now=NOW) == expected


@pytest.mark.parametrize("text", ["yesterday", "15m", "-15x", "2025-13-01T00:00:00Z", ""])
def test_parse_time_rejects_anything_else_with_a_hint(text: str) -> None:
    with pytest.raises(ConfigurationError, match="relative time like -15m"):
        parse_time(text, now=NOW)


def test_agent_configs_merge_the_star_entry_under_each_agent(tmp_path: Path) -> None:
    configs = load_agent_configs(
        write_config(
            tmp_path,
            '"*": {gate_adherence_enabled: true, gate_adherence_threshold: 6}\njim: {gate_adherence_threshold: 3}\n',
        )
    )
    assert changes_for(configs, "jim") == {"gate_adherence_enabled": True, "gate_adherence_threshold": 3}
    assert changes_for(configs, "pam") == {"gate_adherence_enabled": True, "gate_adherence_threshold": 6}
    only_jim = load_agent_configs(write_config(tmp_path, "jim: {max_correction_attempts: 1}\n"))
    assert changes_for(only_jim, "pam") == {}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "jim: {gate_adherense_enabled: true}\n",
            "jim: unknown configuration key 'gate_adherense_enabled' (did you mean",
        ),
        ("jim: {gate_adherence_threshold: 12}\n", "jim: gate_adherence_threshold"),
        ("- jim\n", "expected a mapping of agent id"),
        ("jim: true\n", "jim: expected a mapping of configuration keys"),
        ("jim: [unclosed\n", "not valid YAML"),
        ("", "expected a mapping of agent id"),
    ],
)
def test_bad_agent_config_files_name_the_file_and_the_problem(tmp_path: Path, text: str, message: str) -> None:
    path = write_config(tmp_path, text)
    with pytest.raises(ConfigurationError) as caught:
        load_agent_configs(path)
    assert str(caught.value).startswith(f"{path}: ") and message in str(caught.value)


def test_a_missing_config_file_is_a_configuration_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match="cannot read"):
        load_agent_configs(tmp_path / "absent.yaml")


def _record(value: dict[str, object], *, key: str = "jim", timestamp: int = 1_000) -> ConsumerRecord[bytes, bytes]:
    body = orjson.dumps(value)
    return ConsumerRecord("t", 0, 0, timestamp, 0, key.encode(), body, None, len(key), len(body), ())


@pytest.mark.parametrize(
    ("attempt", "timestamp", "key", "expected"),
    [
        (1, 1_000, "jim", Disposition.REPLAY),
        (2, 1_000, "jim", Disposition.RETRY),  # a retry answered the first gate's feedback: never replayed
        (1, 5_000, "jim", Disposition.OUT_OF_WINDOW),
        (1, 1_000, "pam", Disposition.INVALID),  # the key is not the agent id
    ],
)
def test_only_first_attempts_in_the_window_are_replayed(
    attempt: int, timestamp: int, key: str, expected: Disposition
) -> None:
    draft = {"draft_id": "d1", "attempt": attempt, "agent_id": "jim", "agent_name": "Jim", "text": "hi"}
    assert disposition(_record(draft, key=key, timestamp=timestamp), Window(0, 2_000)) is expected


# -- replay from the database ----------------------------------------------------------------------------------


@pytest.mark.parametrize("source", [[], ["--from-topic", "drift.drafts", "--from-database"]])
def test_replay_takes_exactly_one_source(source: list[str]) -> None:
    import subprocess

    from tests.stack import DRIFT

    args = [DRIFT, "replay", *source, "--since", "-1h", "--to-prefix", "x."]
    done = subprocess.run(args, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 2 and done.stderr.strip() == "drift: give either --from-topic or --from-database"


def test_a_recorded_first_attempt_becomes_the_same_draft_again() -> None:
    from streams.client.replay_database import draft_of

    row = {"draft_id": "d1", "agent_id": "pam", "run_id": "r1", "original_text": "Hi", "agent_name": "Pam",
           "channel": "#office", "recipient": None}  # fmt: skip
    draft = draft_of(row)
    assert draft is not None
    assert (draft.draft_id, draft.attempt, draft.agent_id, draft.text, draft.channel) == (
        "d1",
        1,
        "pam",
        "Hi",
        "#office",
    )
    assert draft_of({**row, "original_text": "x" * 40_000}) is None  # larger than a draft may be today: invalid
