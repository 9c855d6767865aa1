"""``drift shadow start`` checks everything it is given before anything is stored: one ``drift: …`` line, exit 2.
The database URL points nowhere: a command that got as far as connecting would say so instead."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from streams.cli import main
from tests.stack import DRIFT

NOWHERE = ["--database", "postgresql://nobody@127.0.0.1:9/none"]


def run(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], *args: str) -> tuple[object, str]:
    monkeypatch.setattr(sys, "argv", ["drift", "shadow", *args, *NOWHERE])
    with pytest.raises(SystemExit) as ended:
        main()
    return ended.value.code, capsys.readouterr().err


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["start", "bad name", "--agents", "a*"], "invalid shadow name 'bad name'"),
        (["start", "s", "--agents", "a b"], "invalid agent pattern 'a b'"),
        (["start", "s", "--agents", "a*", "--set", "gate_adherence_threshold=12"],
         "invalid configuration for shadow s: gate_adherence_threshold = '12'"),
        (["start", "s", "--agents", "a*", "--set", "gate_threshold=7"], "unknown configuration key 'gate_threshold'"),
        (["start", "s", "--agents", "a*", "--set", "judge=offline"], "shadow s: give 'judge' with --judge"),
        (["start", "s", "--agents", "a*", "--sample", "1.5"], "--sample must be > 0 and <= 1"),
        (["start", "s", "--agents", "a*", "--budget-usd", "1", "--max-tokens", "5"], "give --budget-usd or"),
        (["start", "s", "--agents", "a*", "--judge", "scripted:/no/such.yaml"], "--judge: cannot read scripted"),
        (["start", "s", "--agents", "a*", "--judge", "nonsense"], "--judge: "),
        (["start", "s", "--agents", "a*", "--propositions", "/no/such/tree"], "--propositions: no such directory"),
    ],
)  # fmt: skip
def test_a_bad_input_is_one_line_and_exit_2_before_anything_is_stored(
    args: list[str], says: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    code, err = run(monkeypatch, capsys, *args)
    assert code == 2 and err.startswith(f"drift: {says}") and len(err.strip().splitlines()) == 1, err


def test_a_tree_is_checked_as_drift_propositions_validate_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    code, err = run(monkeypatch, capsys, "start", "s", "--agents", "a*", "--propositions", str(empty))
    assert code == 2 and "holds no propositions files" in err
    broken = tmp_path / "broken"
    (broken / "adherence").mkdir(parents=True)
    (broken / "adherence" / "default.yaml").write_text("propositions: [\n")
    code, err = run(monkeypatch, capsys, "start", "s", "--agents", "a*", "--propositions", str(broken))
    assert code == 2 and err.startswith("drift: --propositions: ") and "default.yaml:" in err, err


def test_the_installed_command_says_the_same_in_one_line() -> None:
    done = subprocess.run([DRIFT, "shadow", "start", "s", "--agents", "a*", "--set", "gate_threshold=7", *NOWHERE],
                          capture_output=True, text=True, timeout=60, check=False)  # fmt: skip
    assert done.returncode == 2 and done.stderr.startswith("drift: unknown configuration key 'gate_threshold'")
    assert len(done.stderr.strip().splitlines()) == 1
