"""Code from a file tries the escapes an attacker would; the sandbox stops each, and without it each works.

Every escape runs twice where that is safe: in the sandbox (it must fail) and through the explicit
unsandboxed path (``--allow-unsandboxed-code`` where the sandbox cannot be had: it must succeed), so each test
proves the sandbox is what stops it. The fork bomb and ``ptrace`` run in the sandbox only. The sandbox must be
installed (``make test`` installs bubblewrap and python3-seccomp): without it these tests fail, they do not skip.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from engine.formats.bwrap import command_runtime, interpreter
from engine.formats.plexus.code import CodeNodeError, CodeRequest, run_code
from engine.formats.sandbox import Limits, SandboxResult
from engine.formats.usercode import STRICT, CodeSandbox, SandboxUnavailable, run_user_code

UNSANDBOXED = CodeSandbox(allow_unsandboxed=True, bwrap="drift-test-no-such-bwrap")
LIMITS = Limits(wall_s=30, cpu_s=10, memory_mb=512, processes=24)
SECRET = "top-secret-7f3a"


@pytest.fixture(scope="module", autouse=True)
def _sandbox_required() -> None:
    if not STRICT.available:
        pytest.fail(f"the user-code sandbox is unavailable here: {STRICT.probe().reason}")


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    """The user file's folder (open to others, as a checkout is), beside a root-only secret."""
    user = tmp_path / "user"
    user.mkdir(mode=0o755)
    user.chmod(0o755)
    (user / "data.txt").write_text("visible")
    outside = tmp_path / "outside"
    outside.mkdir(mode=0o755)
    outside.chmod(0o755)
    secret = outside / "secret.txt"
    secret.write_text(SECRET)
    secret.chmod(0o600)
    return user


async def judge(code: str, folder: Path, sandbox: CodeSandbox = STRICT, limits: Limits = LIMITS) -> SandboxResult:
    """A code judge: any command, here the Python drift runs on."""
    return await run_user_code(
        [sys.executable, "-c", code], b"", sandbox=sandbox, runtime=command_runtime(), folder=folder, limits=limits
    )


def out(result: SandboxResult) -> str:
    return result.stdout.decode() + result.stderr.decode()


async def test_the_code_runs_as_a_stranger_without_privileges(folder: Path) -> None:
    probe = "print(open('/proc/self/status').read())"
    status = dict(line.split(":\t", 1) for line in out(await judge(probe, folder)).splitlines() if ":\t" in line)
    assert status["Uid"].split()[0] not in {"0", str(os.getuid())}
    assert status["CapEff"].strip() == status["CapBnd"].strip() == "0000000000000000"
    assert status["NoNewPrivs"].strip() == "1"
    assert status["Seccomp"].strip() == "2"  # a filter is loaded


async def test_a_root_only_file_outside_the_folder_cannot_be_read(folder: Path) -> None:
    code = "print(open('../outside/secret.txt').read())"
    assert SECRET not in out(await judge(code, folder))
    assert SECRET in out(await judge(code, folder, UNSANDBOXED))


async def test_the_folder_is_readable_and_nothing_is_writable_but_tmp(folder: Path) -> None:
    code = (
        "import os\nprint(open('data.txt').read())\n"
        "for path in ('written.txt', '../written.txt', '/tmp/scratch.txt'):\n"
        "    try:\n        open(path, 'w').write('x'); print('wrote', path)\n"
        "    except OSError as exc:\n        print('refused', path, exc.errno)\n"
    )
    lines = out(await judge(code, folder)).splitlines()
    assert lines[0] == "visible"
    assert lines[1].startswith("refused written.txt") and lines[2].startswith("refused ../written.txt")
    assert lines[3] == "wrote /tmp/scratch.txt"  # its own tmpfs
    assert not (folder / "written.txt").exists() and not (folder.parent / "written.txt").exists()
    await judge(code, folder, UNSANDBOXED)
    assert (folder / "written.txt").exists() and (folder.parent / "written.txt").exists()


@pytest.fixture
async def bystander() -> AsyncIterator[asyncio.subprocess.Process]:
    """A process of the service's user that user code must not be able to signal."""
    process = await asyncio.create_subprocess_exec("sleep", "60")
    yield process
    if process.returncode is None:
        process.kill()
    await process.wait()


async def test_another_process_of_the_service_cannot_be_signalled(
    folder: Path, bystander: asyncio.subprocess.Process
) -> None:
    code = (
        "import os\nprint(sorted(int(p) for p in os.listdir('/proc') if p.isdigit()))\n"
        f"try:\n    os.kill({bystander.pid}, 9); print('killed')\n"
        "except OSError as exc:\n    print(type(exc).__name__)\n"
    )
    seen, outcome = out(await judge(code, folder)).splitlines()[:2]
    assert max(json.loads(seen)) < 10  # only its own PID namespace is visible
    assert outcome == "ProcessLookupError"
    assert bystander.returncode is None
    assert "killed" in out(await judge(code, folder, UNSANDBOXED))
    assert await asyncio.wait_for(bystander.wait(), 10) == -signal.SIGKILL


async def test_a_socket_reaches_nothing(folder: Path) -> None:
    connections = 0

    def accepted(_reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal connections
        connections += 1
        writer.close()

    server = await asyncio.start_server(accepted, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    code = (
        "import socket\ntry:\n"
        f"    socket.create_connection(('127.0.0.1', {port}), 3); print('connected')\n"
        "except OSError as exc:\n    print('refused', exc.errno)\n"
    )
    async with server:
        assert out(await judge(code, folder)).split()[0] == "refused"
        assert connections == 0
        assert out(await judge(code, folder, UNSANDBOXED)).strip() == "connected"


async def test_ctypes_cannot_make_the_calls_the_filter_refuses(
    folder: Path, bystander: asyncio.subprocess.Process
) -> None:
    code = (
        "import ctypes\nlibc = ctypes.CDLL(None, use_errno=True)\n"
        "print(libc.unshare(0x10000000), ctypes.get_errno())\n"  # CLONE_NEWUSER
        f"print(libc.ptrace(16, {bystander.pid}, 0, 0), ctypes.get_errno())\n"  # PTRACE_ATTACH
    )
    unshare, ptrace = out(await judge(code, folder)).splitlines()
    assert unshare == "-1 1" and ptrace == "-1 1"  # EPERM from the seccomp filter
    plain = "import ctypes\nprint(ctypes.CDLL(None, use_errno=True).unshare(0x10000000))\n"
    assert out(await judge(plain, folder, UNSANDBOXED)).strip() == "0"  # the same call, allowed without it


async def test_a_fork_bomb_stops_at_the_process_limit(folder: Path) -> None:
    code = (
        "import os, time\nchildren = 0\n"
        "for _ in range(500):\n    try:\n        pid = os.fork()\n    except OSError:\n        break\n"
        "    if pid == 0:\n        time.sleep(30); os._exit(0)\n    children += 1\n"
        "print(children)\n"
    )
    result = await judge(code, folder, limits=Limits(wall_s=30, cpu_s=10, memory_mb=512, processes=12))
    assert result.returncode == 0, out(result)
    assert int(result.stdout) < 12


async def test_the_services_secrets_do_not_reach_the_code(folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-secret-value")
    monkeypatch.setenv("DRIFT_DATABASE_URL", "postgresql://u:pw@h/db")
    names = out(await judge("import os; print(sorted(os.environ))", folder))
    assert "ANTHROPIC" not in names and "DRIFT_" not in names and "PATH" in names


FORK_EXEC = """
import os, _posixsubprocess

def score(parameters, input):
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    argv = [a.encode() for a in parameters["argv"]]
    pid = _posixsubprocess.fork_exec(
        argv, [argv[0]], True, tuple(sorted((out_w, err_w))), None, None,
        -1, -1, out_r, out_w, -1, -1, err_r, err_w, True, False, -1, None, None, None, -1, None, False,
    )
    os.close(out_w)
    os.close(err_w)
    failure = os.read(err_r, 4096)
    chunks = []
    while chunk := os.read(out_r, 65536):
        chunks.append(chunk)
    os.waitpid(pid, 0)
    return {"value": (b"".join(chunks) or failure).decode(errors="replace")}
"""


@pytest.mark.parametrize("via", ["cat", "python"])
async def test_a_code_node_spawning_through_posixsubprocess_reads_nothing_outside(folder: Path, via: str) -> None:
    secret = str(folder.parent / "outside" / "secret.txt")
    argv = ["/bin/cat", secret] if via == "cat" else [str(interpreter()), "-c", f"print(open({secret!r}).read())"]
    request = CodeRequest("score", FORK_EXEC, "score", {"argv": argv}, "", {}, {})
    try:
        sandboxed = await run_code(request, folder=folder)
    except CodeNodeError as exc:
        sandboxed = {"value": str(exc)}
    assert SECRET not in str(sandboxed)
    unsandboxed = await run_code(request, folder=folder, sandbox=UNSANDBOXED)  # the audit hook alone: no boundary
    assert SECRET in str(unsandboxed)


async def test_without_the_sandbox_nothing_runs_unless_allowed(folder: Path) -> None:
    missing = CodeSandbox(bwrap="drift-test-no-such-bwrap")
    with pytest.raises(SandboxUnavailable, match=r"bubblewrap \(bwrap\) is not installed.*--allow-unsandboxed-code"):
        missing.require("cases.yaml")
    refused = await judge("print('ran')", folder, missing)
    assert refused.stdout == b"" and refused.error is not None and "--allow-unsandboxed-code" in refused.error
    assert (UNSANDBOXED.label, STRICT.label) == ("UNSANDBOXED user code (--allow-unsandboxed-code)", None)
    assert out(await judge("print('ran')", folder, UNSANDBOXED)).strip() == "ran"


async def test_a_folder_closed_to_others_is_a_clear_error(folder: Path) -> None:
    folder.chmod(0o700)
    result = await judge("print('ran')", folder)
    assert result.error is not None and "closed to other users (mode 700)" in result.error
