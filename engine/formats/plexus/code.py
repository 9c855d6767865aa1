"""Plexus code nodes (LogicalClassifier, LogicalNode): user Python run out of process under the sandbox.

The worker never executes user code itself. :func:`run_code` starts :mod:`.coderunner` with ``python -I -S``
through :func:`engine.formats.sandbox.run_sandboxed` (empty environment, CPU / memory / wall-clock limits, no
network where the platform allows), sends the request as JSON on stdin and reads one JSON answer. Whatever
the code does — loop, allocate, raise, reach for the network or the environment — the caller gets a
:class:`CodeNodeError` with a one-line reason, and the run goes on.
"""

from __future__ import annotations

import json
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from engine.errors import DriftError
from engine.formats.sandbox import Limits, run_sandboxed

RUNNER = Path(__file__).with_name("coderunner.py")
MODULE = "plexus_code"  # the name the child imports the user's code under
#: Limits of one code-node call: plenty for decision logic, little for anything else.
CODE_LIMITS = Limits(wall_s=5.0, cpu_s=2, memory_mb=256, file_mb=1, max_output_bytes=1024 * 1024)


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


async def run_code(request: CodeRequest, *, limits: Limits = CODE_LIMITS) -> Any:
    """Run one code-node call in a sandboxed child; the user's code goes to it as a module file, read-only."""
    with tempfile.TemporaryDirectory(prefix="drift-code-") as module_dir:
        (Path(module_dir) / f"{MODULE}.py").write_text(request.code, encoding="utf-8")
        payload = _payload(request, module_dir)
        done = await run_sandboxed([sys.executable, "-I", "-S", str(RUNNER)], payload, limits=limits)
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


def _payload(request: CodeRequest, module_dir: str) -> bytes:
    fields = {
        "kind": request.kind,
        "module_dir": module_dir,
        "function": request.function,
        "parameters": request.parameters,
        "text": request.text,
        "metadata": request.metadata,
        "state": request.state,
    }
    return json.dumps(fields, default=str).encode()
