"""The bubblewrap command line of the user-code sandbox: what the program sees and who it runs as (pure).

:func:`bwrap_argv` builds ``bwrap … --`` for one run: new IPC, PID, network, UTS and cgroup namespaces (no
network: only a downed loopback; no view of the service's processes), a new session (no typing into the
terminal), death with its parent, and a mount namespace whose root is an empty tmpfs remounted read-only
holding only:

* the :class:`Runtime`'s paths, read-only, each at its own path (the interpreter's installation and the
  system's shared libraries for Python code; all of ``/usr``, a few files of ``/etc`` and drift's Python with
  its virtual environment for a command);
* the user file's folder, read-only, as the working directory, and the folders of the files its command
  names outside it (``../judges/x.ts``), read-only;
* a private writable tmpfs at ``/tmp`` (also ``HOME``), a fresh ``/proc`` of its own PID namespace, a
  minimal ``/dev``.

Who runs it: as root, bubblewrap keeps the host's user namespace, gives the command only the capabilities
to change user, and util-linux's ``setpriv`` becomes a fresh unprivileged uid/gid of its own (:func:`run_uid`:
one above 10⁹ that owns no file on the host and no other process) with no capabilities at all, no groups and
``no_new_privs`` before executing the program — so the kernel treats the program as a stranger: it cannot
read a root-only file even where one is visible, signal or trace anything outside, and ``RLIMIT_NPROC`` counts
its own processes only. As any other user, bubblewrap maps the service's user to 65534 (``nobody``) in a new
user namespace with no capabilities. The seccomp program arrives on a descriptor (``--seccomp FD``).
"""

from __future__ import annotations

import os
import secrets
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

NOBODY = 65534
#: the uids (and gids) a sandbox runs as when drift is root: far above the ranges distributions hand out
RUN_IDS = range(1_000_000_000, 1_000_000_000 + 2**24)
SETPRIV = Path("/usr/bin/setpriv")
#: /etc files a command may need to start (dynamic linker cache, Debian's alternatives links, user names)
ETC_FILES = (
    "/etc/ld.so.cache",
    "/etc/ld.so.conf",
    "/etc/ld.so.conf.d",
    "/etc/alternatives",
    "/etc/passwd",
    "/etc/group",
    "/etc/nsswitch.conf",
    "/etc/localtime",
)
#: inside the sandbox: its private tmpfs (also HOME and the working directory when there is no folder)
TMP = "/tmp"  # noqa: S108
_SPECIAL = (Path(TMP), Path("/proc"), Path("/dev"))


@dataclass(frozen=True, slots=True)
class Runtime:
    """What a sandboxed program gets besides its folder, ``/tmp``, ``/proc`` and ``/dev``."""

    name: str
    #: read-only, each at its own path
    paths: tuple[Path, ...]
    #: the top-level links of a merged-/usr system (``/lib -> usr/lib``), recreated as links
    links: tuple[str, ...]
    search_path: str


def interpreter() -> Path:
    """The Python executable drift runs on (a virtual environment's ``python`` resolved to it)."""
    return Path(os.path.realpath(sys.executable))


def _python_home() -> Path:
    return Path(os.path.realpath(sys.base_prefix))


def python_runtime() -> Runtime:
    """For Python code (Plexus code nodes): the interpreter's installation and the system's shared libraries."""
    paths = [_python_home(), Path("/usr/lib"), Path("/usr/lib64"), Path("/etc/ld.so.cache")]
    return Runtime("python", _existing(paths), ("/lib", "/lib64"), str(_python_home() / "bin"))


def command_runtime() -> Runtime:
    """For any command (AgentV code judges): all of ``/usr``, a few ``/etc`` files and drift's Python with the
    packages installed beside it (its virtual environment, read-only), first on ``PATH``."""
    environment = Path(sys.prefix)
    paths = [Path("/usr"), *(Path(p) for p in ETC_FILES), _python_home(), environment]
    search = f"{environment / 'bin'}:{_python_home() / 'bin'}:/usr/local/bin:/usr/bin:/bin"
    return Runtime("command", _existing(paths), ("/bin", "/sbin", "/lib", "/lib64"), search)


def _existing(paths: Iterable[Path]) -> tuple[Path, ...]:
    return tuple(p for p in paths if p.exists())


def _mounts(paths: Iterable[Path]) -> list[Path]:
    """Distinct paths, parents first, without those already inside another."""
    kept: list[Path] = []
    for path in sorted({Path(os.path.realpath(p)) for p in paths}):
        if not any(path == k or k in path.parents for k in kept):
            kept.append(path)
    return kept


def _bind_words(paths: Iterable[Path]) -> list[str]:
    words: list[str] = []
    made: set[Path] = set(_SPECIAL)
    for path in sorted(paths, key=str):
        for parent in reversed(path.parents):
            if parent != Path("/") and parent not in made:
                words += ["--perms", "0755", "--dir", str(parent)]
                made.add(parent)
        words += ["--ro-bind", str(path), str(path)]
        made.add(path)
    return words


def _link_words(links: Sequence[str]) -> list[str]:
    words: list[str] = []
    for link in links:
        if os.path.islink(link):
            words += ["--symlink", os.readlink(link), link]
        elif os.path.isdir(link):
            words += ["--ro-bind", link, link]
    return words


def run_uid() -> int:
    """A fresh uid for one sandboxed run (as root): its processes share it with nothing else on the host."""
    return RUN_IDS[secrets.randbelow(len(RUN_IDS))]


def _identity(as_root: bool) -> tuple[list[str], list[str]]:
    """Namespace words for bwrap, and the words that follow ``--`` before the program."""
    namespaces = ["--unshare-ipc", "--unshare-pid", "--unshare-net", "--unshare-uts", "--unshare-cgroup-try"]
    if not as_root:
        user = ["--unshare-user", "--uid", str(NOBODY), "--gid", str(NOBODY), "--cap-drop", "ALL"]
        return [*user, *namespaces], []
    keep = ["--cap-drop", "ALL", "--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID", "--cap-add", "CAP_SETPCAP"]
    uid = run_uid()
    drop = [str(SETPRIV), f"--reuid={uid}", f"--regid={uid}", "--clear-groups"]
    drop += ["--bounding-set=-all", "--inh-caps=-all", "--no-new-privs", "--"]
    return [*namespaces, *keep], drop


def bwrap_argv(
    binary: str,
    runtime: Runtime,
    *,
    folder: Path | None,
    also: Sequence[Path] = (),
    tmp_mb: int,
    seccomp_fd: int,
    as_root: bool,
) -> list[str]:
    """``bwrap …`` up to and including the words before the user's program; ``folder`` is the working
    directory, ``also`` more folders shown read-only."""
    namespaces, drop = _identity(as_root)
    user = [p for p in (folder, *also) if p is not None and p != Path("/")]
    mounts = _mounts([*runtime.paths, *([SETPRIV] if as_root else []), *user])
    words = [binary, *namespaces, "--die-with-parent", "--new-session"]
    words += ["--perms", "1777", "--size", str(max(1, tmp_mb) * 1024 * 1024), "--tmpfs", TMP]
    words += ["--proc", "/proc", "--dev", "/dev", *_link_words(runtime.links), *_bind_words(mounts)]
    words += ["--remount-ro", "/", "--chdir", str(folder or TMP), "--clearenv"]
    for name, value in (("PATH", runtime.search_path), ("LANG", "C.UTF-8"), ("HOME", TMP), ("TMPDIR", TMP)):
        words += ["--setenv", name, value]
    return [*words, "--seccomp", str(seccomp_fd), "--", *drop]
