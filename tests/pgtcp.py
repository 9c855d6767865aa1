"""A production-like PostgreSQL for tests that need one: its own cluster over TCP on a free port, scram-sha-256
authentication, a non-superuser role owning its database, a password full of URL-reserved characters.

It uses the server binaries at hand (the embedded ``pgserver`` wheel's, else Debian's ``postgresql``) and is
skipped, with the reason, when none can run here.
"""

from __future__ import annotations

import asyncio
import contextlib
import glob
import os
import pwd
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

import asyncpg

from streams.embedded import free_port

PASSWORD = "p@ss:w/rd%"
#: Every spelling of PASSWORD that must never be printed (as typed, percent-encoded either case).
PASSWORD_SPELLINGS = (PASSWORD, quote(PASSWORD, safe=""), quote(PASSWORD, safe="").lower())


class Unavailable(Exception):
    """No PostgreSQL server binaries can run here (the message says why)."""


@dataclass
class TcpPostgres:
    root: Path
    port: int
    process: subprocess.Popen[bytes]

    @property
    def url(self) -> str:
        return f"postgresql://drift:{quote(PASSWORD, safe='')}@127.0.0.1:{self.port}/drift"

    def url_with_password(self, password: str) -> str:
        return f"postgresql://drift:{quote(password, safe='')}@127.0.0.1:{self.port}/drift"

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()  # smart shutdown is fine: every test client has gone
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def _binaries() -> Path:
    candidates: list[str] = []
    with contextlib.suppress(ImportError):
        import pgserver

        candidates.append(str(Path(pgserver.__file__).parent / "pginstall" / "bin"))
    candidates += sorted(glob.glob("/usr/lib/postgresql/*/bin"), reverse=True)
    for folder in candidates:
        if (Path(folder) / "initdb").is_file() and (Path(folder) / "postgres").is_file():
            return Path(folder)
    raise Unavailable("no PostgreSQL server binaries (pgserver or Debian's postgresql)")


def _run_as() -> str | None:
    """PostgreSQL refuses to run as root: use the unprivileged user pgserver or Debian created."""
    if os.geteuid() != 0:
        return None
    for name in ("pgserver", "postgres"):
        with contextlib.suppress(KeyError):
            pwd.getpwnam(name)
            return name
    raise Unavailable("running as root and no unprivileged 'pgserver' or 'postgres' user exists")


def start_tcp_postgres() -> TcpPostgres:
    """Initialise and start a cluster in a new temporary directory (its parents readable by the server's user),
    create the ``drift`` role and database; raise Unavailable."""
    binaries, user = _binaries(), _run_as()
    root = Path(tempfile.mkdtemp(prefix="drift-pgtcp-"))
    root.chmod(0o755)
    (root / "admin.pw").write_text("admin-pw\n")
    (root / "sock").mkdir(exist_ok=True)
    if user is not None:
        info = pwd.getpwnam(user)
        for path in (root, root / "admin.pw", root / "sock"):
            os.chown(path, info.pw_uid, info.pw_gid)
    initdb = [str(binaries / "initdb"), "-D", str(root / "data"), "-U", "admin", "--auth=scram-sha-256",
              f"--pwfile={root / 'admin.pw'}", "-E", "UTF8", "--no-sync"]  # fmt: skip
    done = subprocess.run(initdb, user=user, capture_output=True, text=True, check=False, timeout=120)
    if done.returncode != 0:
        raise Unavailable(f"initdb failed: {done.stderr.strip()[-500:]}")
    port = free_port()
    args = [str(binaries / "postgres"), "-D", str(root / "data"), "-h", "127.0.0.1", "-p", str(port),
            "-k", str(root / "sock"), "-c", "fsync=off"]  # fmt: skip
    with open(root / "postgres.log", "ab") as log:
        process = subprocess.Popen(args, user=user, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    server = TcpPostgres(root, port, process)
    try:
        asyncio.run(_create_role(server))
    except Exception as exc:
        server.stop()
        raise Unavailable(f"the TCP PostgreSQL did not come up: {exc}") from None
    return server


async def _create_role(server: TcpPostgres, timeout_s: float = 30.0) -> None:
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            conn = await asyncpg.connect(host="127.0.0.1", port=server.port, user="admin", password="admin-pw",
                                         database="postgres")  # fmt: skip
            break
        except (OSError, asyncpg.PostgresError):
            if server.process.poll() is not None or time.monotonic() > deadline:
                raise
            await asyncio.sleep(0.1)
    try:
        await conn.execute(f"CREATE ROLE drift LOGIN PASSWORD '{PASSWORD}'")  # a literal of this module
        await conn.execute("CREATE DATABASE drift OWNER drift")
    finally:
        await conn.close()
