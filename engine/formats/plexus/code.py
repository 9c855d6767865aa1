"""Plexus code nodes (LogicalClassifier, LogicalNode): user Python run out of process in the user-code sandbox.

The worker never executes user code itself. :func:`run_code` starts :mod:`.coderunner` with ``python -I -S``
through :func:`engine.formats.usercode.run_user_code` — bubblewrap with the Python runtime only (the
interpreter's installation and the system's shared libraries), the scorecard's folder read-only, a private
``/tmp``, no network, another user without capabilities, a seccomp filter, CPU / memory / wall-clock limits —
sends the request (the code included) on stdin and reads one JSON answer. Whatever the code does —
loop, allocate, raise, reach for the network, the environment or the files around it — the caller gets a
:class:`CodeNodeError` with a one-line reason, and the run goes on. Where the sandbox cannot be had, the code
does not run (the reason is the error) unless the run allowed unsandboxed code.
"""

from __future__ import annotations

import json
import marshal
from collections.abc import Iterable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal

from engine.errors import DriftError
from engine.formats.bwrap import interpreter, python_runtime
from engine.formats.plexus.model import Score
from engine.formats.sandbox import Limits
from engine.formats.usercode import STRICT, CodeSandbox, run_user_code

RUNNER = Path(__file__).resolve().with_name("coderunner.py")
CODE_CLASSES = frozenset({"LogicalClassifier", "LogicalNode"})
#: Limits of one code-node call: plenty for decision logic, little for anything else.
CODE_LIMITS = Limits(wall_s=5.0, cpu_s=2, memory_mb=256, file_mb=1, max_output_bytes=1024 * 1024, processes=16)


class CodeNodeError(DriftError):
    """A code node failed: its code raised, broke a limit or answered something unreadable."""


@dataclass(frozen=True, slots=True)
class CodeRequest:
    kind: Literal["score", "node"]
    code: str
    function: str
    parameters: dict[str, Any]
    text: str
    metadata: dict[str, Any]
    state: dict[str, Any]


def has_code(scores: Iterable[Score]) -> bool:
    """True when any of ``scores`` has a code node (so running it needs the sandbox)."""
    return any(node.node_class in CODE_CLASSES for score in scores for node in score.graph or ())


async def run_code(
    request: CodeRequest,
    *,
    limits: Limits = CODE_LIMITS,
    sandbox: CodeSandbox = STRICT,
    folder: Path | None = None,
) -> Any:
    """Run one code-node call in a sandboxed child; ``folder`` (the scorecard's) is visible to it, read-only."""
    runtime = replace(python_runtime(), paths=(*python_runtime().paths, RUNNER))
    argv = [str(interpreter()), "-I", "-S", str(RUNNER)]
    done = await run_user_code(
        argv, _payload(request, folder), sandbox=sandbox, runtime=runtime, folder=folder, limits=limits,
        what="this scorecard",
    )  # fmt: skip
    if done.error is not None:
        raise CodeNodeError(done.error)
    try:
        answer = json.loads(done.stdout)
    except ValueError:
        tail = done.stderr.decode(errors="replace").strip().splitlines()[-1:] or ["no output"]
        raise CodeNodeError(f"the code runner gave no answer (exit {done.returncode}): {tail[0]}") from None
    if not isinstance(answer, dict) or not answer.get("ok"):
        raise CodeNodeError(str(answer.get("error") if isinstance(answer, dict) else answer))
    return answer.get("result")


def _payload(request: CodeRequest, folder: Path | None) -> bytes:
    """The request as ``marshal`` (the runner decodes it without importing anything), of JSON's plain values."""
    fields = {
        "kind": request.kind,
        "code": request.code,
        "folder": str(folder) if folder is not None else None,
        "function": request.function,
        "parameters": request.parameters,
        "text": request.text,
        "metadata": request.metadata,
        "state": request.state,
    }
    return marshal.dumps(json.loads(json.dumps(fields, default=str)))
