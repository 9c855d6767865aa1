"""The child side of a Plexus code node: run by ``engine.formats.plexus.code`` in the sandbox, never imported.

Reads one request on stdin (``marshal``: it comes from drift, and decoding it needs no import), compiles the
user's code (``code``) as the module ``plexus_code``, calls the named function and writes one JSON answer on
stdout: ``{"ok": true, "result": …}`` or ``{"ok": false, "error": "…"}`` (a small encoder of its own: ``import
json`` pulls in ``re``, ``enum`` and ``functools``, which cost more than the rest of a call; objects that are
not JSON become their ``str``, as with ``default=str``). The boundary is the sandbox around this process
(``engine.formats.usercode``: another user, no capabilities, a read-only root holding only the interpreter, no
network, a seccomp filter, rlimits). As a second layer only — CPython's audit hooks are not a security
boundary — before the user's code runs, environment variables become unreadable (any access raises) and an
audit hook refuses sockets, subprocesses, native libraries and opening files outside the Python installation
and the scorecard's folder (``folder``).
Uses the standard library only (it runs with ``python -I -S``).
"""

from __future__ import annotations

import marshal
import os
import sys
from _collections_abc import Iterator, MutableMapping  # already loaded by ``os``; ``collections.abc`` is not

TYPE_CHECKING = False  # not ``typing.TYPE_CHECKING``: importing typing alone costs milliseconds
if TYPE_CHECKING:  # every code-node call pays for this script's start-up
    from typing import Any
else:
    Any = object

_BLOCKED_EVENTS = (
    "socket.",
    "subprocess.",
    "os.system",
    "os.exec",
    "os.posix_spawn",
    "os.spawn",
    "os.fork",
    "os.putenv",
    "os.unsetenv",
    "ctypes.",
    "pty.",
    "shutil.rmtree",
    "webbrowser.",
)


class _NoEnvironment(MutableMapping[str, str]):
    def _refuse(self, *_: object) -> Any:
        raise PermissionError("code nodes cannot read or set environment variables")

    __getitem__ = __setitem__ = __delitem__ = _refuse

    def __iter__(self) -> Iterator[str]:
        return self._refuse()  # type: ignore[no-any-return]

    def __len__(self) -> int:
        return self._refuse()  # type: ignore[no-any-return]

    def get(self, *_: object) -> Any:
        return self._refuse()


#: the only files code may open: the Python installation (so imports work) and the scorecard's folder, read-only.
#: Nothing else — in particular not ``/proc/<pid>/environ``.
_READABLE = [os.path.realpath(p) + os.sep for p in {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix}]
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_TRUNC


def _check_open(path: object, mode: object, flags: object) -> None:
    if isinstance(path, int):  # an already open descriptor (stdin/stdout)
        return
    name = os.fsdecode(path) if isinstance(path, str | bytes) else str(path)
    writes = (isinstance(mode, str) and any(c in mode for c in "wax+")) or (
        isinstance(flags, int) and bool(flags & _WRITE_FLAGS)
    )
    if writes or not os.path.realpath(name).startswith(tuple(_READABLE)):
        raise PermissionError(f"code nodes may not open files ({name})")


def _audit(event: str, args: tuple[object, ...]) -> None:
    if event.startswith(_BLOCKED_EVENTS):
        raise PermissionError(f"code nodes may not use {event} (no network, processes or native code)")
    if event == "open" and args:
        _check_open(args[0], args[1] if len(args) > 1 else None, args[2] if len(args) > 2 else None)


class Attributes(dict[str, Any]):
    """A dict whose keys are also attributes (``input.metadata``, ``state.field``), with ``model_dump``."""

    def __getattr__(self, name: str) -> Any:
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None

    def model_dump(self) -> dict[str, Any]:
        return dict(self)


class Result:
    def __init__(
        self,
        parameters: Any = None,
        value: Any = None,
        explanation: Any = None,
        metadata: dict[str, Any] | None = None,
        **extra: Any,
    ) -> None:
        self.parameters = parameters
        self.value = value
        self.explanation = explanation
        self.metadata = dict(metadata or {})
        self.metadata.update(extra)


class Score:
    Parameters = Attributes
    Input = Attributes
    Result = Result


MODULE = "plexus_code"


def _load(code: str) -> Any:
    """Run the user's module (its top level runs here, after the audit hook is in place); ``Score`` is
    provided as a builtin, as Plexus code expects it without an import."""
    import builtins

    builtins.Score = Score  # type: ignore[attr-defined]
    sys.dont_write_bytecode = True
    module = type(sys)(MODULE)
    module.__file__ = f"{MODULE}.py"
    sys.modules[MODULE] = module
    exec(compile(code, module.__file__, "exec"), module.__dict__)  # noqa: S102 — the point of a code node
    return module


def _call(request: dict[str, Any]) -> Any:
    function = getattr(_load(request["code"]), request["function"], None)
    if not callable(function):
        raise NameError(f"the code defines no function {request['function']!r}")
    parameters = Attributes(request.get("parameters") or {})
    if request["kind"] == "score":
        metadata = Attributes({**(request.get("metadata") or {}), **(request.get("state") or {})})
        answer = function(parameters, Attributes(text=request.get("text", ""), metadata=metadata))
        if answer is None:
            return None
        if isinstance(answer, dict):
            answer = Result(**answer)
        return {"value": answer.value, "explanation": answer.explanation, "metadata": answer.metadata}
    context = {
        "state": Attributes(request.get("state") or {}),
        "text": request.get("text", ""),
        "metadata": Attributes(request.get("metadata") or {}),
        "parameters": parameters,
    }
    return function(context)


def _where(exc: BaseException) -> str:
    import traceback  # only when reporting a failure: it pulls in linecache and tokenize

    frames = traceback.extract_tb(exc.__traceback__)
    lines = [frame.lineno for frame in frames if os.path.basename(frame.filename) == f"{MODULE}.py"]
    return f" (code line {lines[-1]})" if lines else ""


_ESCAPES = {**{i: f"\\u{i:04x}" for i in range(32)}, ord('"'): '\\"', ord("\\"): "\\\\"}
_FLOATS = {"nan": "NaN", "inf": "Infinity", "-inf": "-Infinity"}


def _key(key: object) -> str:
    if isinstance(key, str):
        return key
    return "null" if key is None else str(key).lower() if isinstance(key, bool) else str(key)


def encode(value: object) -> str:
    """JSON of plain values (``json.dumps(value, default=str)``'s output, for what a code node returns)."""
    if value is None or isinstance(value, bool):
        return "null" if value is None else "true" if value else "false"
    if isinstance(value, int):
        return int.__repr__(value)
    if isinstance(value, float):
        text = float.__repr__(value)
        return _FLOATS.get(text, text)
    if isinstance(value, list | tuple):
        return "[" + ",".join(encode(item) for item in value) + "]"
    if isinstance(value, dict):
        return "{" + ",".join(f"{encode(_key(k))}:{encode(v)}" for k, v in value.items()) + "}"
    return '"' + (value if isinstance(value, str) else str(value)).translate(_ESCAPES) + '"'


def main() -> None:
    request = marshal.loads(sys.stdin.buffer.read())  # noqa: S302 — written by drift, before any user code
    os.environ = _NoEnvironment()  # type: ignore[assignment]  # noqa: B003 — replaced on purpose, not cleared
    if request.get("folder"):
        _READABLE.append(os.path.realpath(request["folder"]) + os.sep)
    sys.addaudithook(_audit)
    try:
        answer: dict[str, Any] = {"ok": True, "result": _call(request)}
    except MemoryError:
        answer = {"ok": False, "error": "MemoryError: the code exceeded its memory limit"}
    except BaseException as exc:  # every failure of user code is reported, none escapes
        answer = {"ok": False, "error": f"{type(exc).__name__}: {exc}{_where(exc)}"}
    try:
        text = encode(answer)
    except RecursionError:
        text = encode({"ok": False, "error": "the result cannot be written as JSON (circular or too deep)"})
    sys.stdout.buffer.write(text.encode("utf-8", "backslashreplace"))  # a lone surrogate becomes a backslash escape


if __name__ == "__main__":
    main()
