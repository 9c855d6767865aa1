"""``drift propositions validate`` on hostile trees: link loops, oversized and special files (issue 20, point 6)."""

from __future__ import annotations

import os
import subprocess
import threading
from pathlib import Path

import pytest

from engine.errors import ConfigurationError, PropositionFileError
from engine.library import PropositionLibrary
from engine.models import Dimension
from engine.propositions.loader import load_set
from engine.propositions.yamlsource import MAX_FILE_BYTES, read_yaml
from streams.client.replay import load_agent_configs
from tests.conftest import Write
from tests.stack import DRIFT

SMALL = "dimension: adherence\npropositions:\n  - {id: a, claim: b}\n"


def _validate(directory: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("DRIFT_")}
    return subprocess.run(
        [DRIFT, "propositions", "validate", str(directory)],
        env=env, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip


def test_a_symlink_loop_between_two_files_is_an_error_with_its_path(write: Write, tmp_path: Path) -> None:
    write("adherence/_default.yaml", SMALL)
    folder = tmp_path / "adherence"
    (folder / "jim.yaml").symlink_to(folder / "pam.yaml")
    (folder / "pam.yaml").symlink_to(folder / "jim.yaml")
    result = _validate(tmp_path)
    assert result.returncode == 2, result.stdout
    lines = result.stderr.splitlines()
    for name in ("jim.yaml", "pam.yaml"):
        assert f"{folder / name}:1: cannot read file: a loop of symbolic links" in lines
    assert "Traceback" not in result.stderr and "ok" not in result.stdout


def test_a_looping_default_file_and_persona_are_reported_too(write: Write, tmp_path: Path) -> None:
    write("personas/pam.yaml", "id: pam\nname: Pam\n")
    folder = tmp_path / "adherence"
    folder.mkdir()
    (folder / "_default.yaml").symlink_to(folder / "_default.yaml")
    (tmp_path / "personas" / "jim.yaml").symlink_to(tmp_path / "personas" / "nowhere.yaml")
    result = _validate(tmp_path)
    assert result.returncode == 2
    assert f"{folder / '_default.yaml'}:1: cannot read file: a loop of symbolic links" in result.stderr
    assert f"{tmp_path / 'personas' / 'jim.yaml'}:1: cannot read file: No such file or directory" in result.stderr
    with pytest.raises(PropositionFileError, match="loop of symbolic links"):
        load_set(tmp_path, Dimension.ADHERENCE, None)  # the runtime loader does not skip it either


def test_an_oversized_file_is_refused_with_its_size_before_parsing(write: Write, tmp_path: Path) -> None:
    write("adherence/_default.yaml", SMALL)
    big = tmp_path / "adherence" / "jim.yaml"
    # 50 MB of YAML took over a minute and ~870 MB to parse; a sparse file of that size costs nothing here.
    with big.open("wb") as handle:
        handle.write(b"dimension: adherence\npropositions:\n")
        handle.truncate(50 * 1024 * 1024)
    result = _validate(tmp_path)
    assert result.returncode == 2
    expected = f"{big}:1: the file is 52,428,800 bytes; YAML files are limited to 1,048,576 bytes (1 MiB)"
    assert expected in result.stderr.splitlines()


def test_the_cap_is_exact(write: Write, tmp_path: Path) -> None:
    head = "dimension: adherence\n# "
    at_cap = write("at.yaml", head + "x" * (MAX_FILE_BYTES - len(head) - 1) + "\n")
    over = write("over.yaml", head + "x" * (MAX_FILE_BYTES - len(head)) + "\n")
    assert at_cap.stat().st_size == MAX_FILE_BYTES and not read_yaml(at_cap).issues
    assert "limited to 1,048,576 bytes" in read_yaml(over).issues[0].message


def test_a_fifo_is_refused_without_blocking(write: Write, tmp_path: Path) -> None:
    write("adherence/_default.yaml", SMALL)
    fifo = tmp_path / "adherence" / "jim.yaml"
    os.mkfifo(fifo)
    done = threading.Event()
    issues: list[str] = []

    def read() -> None:
        issues.extend(issue.message for issue in read_yaml(fifo).issues)
        done.set()

    threading.Thread(target=read, daemon=True).start()
    assert done.wait(10), "reading a FIFO blocked"
    assert issues == ["cannot read file: not a regular file"]


def test_the_library_refuses_an_oversized_persona(write: Write, tmp_path: Path) -> None:
    write("adherence/_default.yaml", SMALL)
    write("personas/pam.yaml", "id: pam\nname: Pam\nstyle: " + "x" * MAX_FILE_BYTES + "\n")
    with pytest.raises(PropositionFileError, match="YAML files are limited"):
        PropositionLibrary(tmp_path).validate()


def test_a_replay_configuration_file_has_the_same_cap(write: Write) -> None:
    big = write("configs.yaml", "'*': {gate_enabled: false}\n# " + "x" * MAX_FILE_BYTES + "\n")
    with pytest.raises(ConfigurationError, match=f"{big}: the file is .* bytes; YAML files are limited"):
        load_agent_configs(big)
