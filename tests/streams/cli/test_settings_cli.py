"""A bad ``DRIFT_*`` value stops every entry point the same way: one ``drift: DRIFT_X: …`` line, exit code 2,
no traceback, before anything starts (the probes of issue 33). In process: ``streams.cli.main`` as the console
script calls it, and the module ``faust -A streams.worker.entry`` imports."""

from __future__ import annotations

import importlib
import os
import sys

import pytest

from streams.cli import main

SECRET = "sk-ant-very-secret-value"


@pytest.fixture(autouse=True)
def environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in os.environ:
        if name.startswith("DRIFT_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("ANTHROPIC_API_KEY", SECRET)


def _exit_code_and_output(capsys: pytest.CaptureFixture[str], run: object) -> tuple[int | str | None, str, str]:
    with pytest.raises(SystemExit) as ended:
        run()  # type: ignore[operator]
    out, err = capsys.readouterr()
    return ended.value.code, out, err


@pytest.mark.parametrize(
    ("command", "variable", "raw", "says"),
    [
        (["worker"], "DRIFT_WEB_PORT", "-3", "must be greater than or equal to 1, not '-3'"),
        (["up", "--kafka-port", "25001"], "DRIFT_JUDGE_DEADLINE_S", "nan", "must be a finite number, not 'nan'"),
        (["sinks"], "DRIFT_FETCH_MAX_WAIT_MS", "-10", "must be greater than or equal to 0, not '-10'"),
        (["config", "show", "pam"], "DRIFT_RESTORE_CHECKPOINT_S", "-inf", "must be a finite number, not '-inf'"),
        (["topics", "create"], "DRIFT_KAFKA_COMPRESSION", "brotli", "must be one of none, gzip, snappy, lz4, zstd"),
    ],
)
def test_a_bad_value_is_one_line_and_exit_2_at_every_entry_point(
    command: list[str], variable: str, raw: str, says: str, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    monkeypatch.setenv(variable, raw)
    monkeypatch.setattr(sys, "argv", ["drift", *command])
    code, out, err = _exit_code_and_output(capsys, main)
    assert code == 2, err[-2000:]
    (line,) = err.splitlines()
    assert line.startswith(f"drift: {variable}: {says}")
    assert SECRET not in out + err


def test_the_faust_entry_module_stops_the_same_way(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("DRIFT_WEB_PORT", "70000")
    monkeypatch.setenv("DRIFT_SINKS", "x")
    monkeypatch.delitem(sys.modules, "streams.worker.entry", raising=False)
    code, _, err = _exit_code_and_output(capsys, lambda: importlib.import_module("streams.worker.entry"))
    assert code == 2
    assert err.splitlines() == [
        "drift: DRIFT_SINKS: cannot read 'x' as bool",
        "drift: DRIFT_WEB_PORT: must be less than or equal to 65535, not '70000'",
    ]
