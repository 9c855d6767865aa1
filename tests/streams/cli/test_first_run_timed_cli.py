"""A first user's commands through the real entry point, no stack needed (issue 18), points 6 and 7: bad input
fails with exit 2, one line starting ``drift:``, no traceback, within a bound on the time it takes. Every test here
is ``timed`` (it runs while no other test does, tests/conftest.py); they live apart from test_first_run_cli.py so
that `make test` can run that file's other tests side by side with the rest of the suite."""

from __future__ import annotations

from pathlib import Path

import pytest

from streams.embedded import free_port
from tests.streams.cli.first_run_support import assert_one_line_error, drift

pytestmark = pytest.mark.timed


@pytest.mark.parametrize("command", ["worker", "sinks"])
def test_an_unreachable_database_is_one_line_quickly(command: str) -> None:
    database = f"postgresql://drift:secret@127.0.0.1:{free_port()}/drift"
    done, elapsed = drift(command, "--database", database, "--broker", f"127.0.0.1:{free_port()}",
                          env={"DRIFT_CONNECT_TIMEOUT_S": "2"})  # fmt: skip
    assert_one_line_error(done, elapsed, "cannot connect to the database")
    assert "secret" not in done.stderr


def test_db_migrate_with_a_database_that_is_not_a_url() -> None:
    done, elapsed = drift("db", "migrate", "--database", "notaurl")
    assert_one_line_error(done, elapsed, "notaurl")


def test_up_with_an_unusable_data_dir(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    done, elapsed = drift("up", "--data-dir", str(blocker / "state"), "--kafka-port", str(free_port()))
    assert_one_line_error(done, elapsed, "--data-dir", "cannot be used")


def test_demo_with_an_unknown_judge_fails_before_starting_anything() -> None:
    done, elapsed = drift("demo", "--judge", "gpt4")
    assert_one_line_error(done, elapsed, "unknown judge 'gpt4'")
    assert "ready" not in done.stdout


def test_worker_on_a_web_address_it_cannot_listen_on() -> None:
    """192.0.2.1 (TEST-NET-1) is never a local address: binding fails before anything connects."""
    done, elapsed = drift("worker", env={"DRIFT_WEB_HOST": "192.0.2.1", "DRIFT_CONNECT_TIMEOUT_S": "1"})
    assert_one_line_error(done, elapsed, "web server: cannot listen on 192.0.2.1:6066")
