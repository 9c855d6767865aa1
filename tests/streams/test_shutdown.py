"""The second Ctrl-C of a worker stops it at once even while its event loop is blocked (issue 20, point 8).

Faust's orderly stop blocks the worker's event loop at times (it waits, synchronously, for its consumer thread
to stop). A second signal handled through that loop waited with it (a ``drift up`` once took 3.2 s to answer);
after the first signal, the second is handled in the main thread, whatever the loop does.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

#: A worker's first signal, then a second one while the main thread is blocked and the loop does not run.
SCRIPT = textwrap.dedent(
    """
    import asyncio, os, signal, sys, threading, types
    from streams.worker.runner import DriftWorker

    marker = sys.argv[1]

    def kill():
        with open(marker, "w") as out:
            out.write("killed")

    loop = asyncio.new_event_loop()
    loop.add_signal_handler(signal.SIGINT, lambda: None)  # the loop owns SIGINT, as Faust's worker's does
    worker = types.SimpleNamespace(_interrupted=False, on_abort=kill)
    DriftWorker._first_signal_only(worker)  # the first signal: an orderly stop begins
    threading.Timer(0.2, os.kill, (os.getpid(), signal.SIGINT)).start()
    threading.Event().wait(20)  # the stop blocks the main thread; the loop does not run
    sys.exit(3)
    """
)


def test_a_second_signal_aborts_while_the_loop_is_blocked(tmp_path: Path) -> None:
    marker = tmp_path / "killed"
    done = subprocess.run([sys.executable, "-c", SCRIPT, str(marker)], cwd=REPO, capture_output=True, text=True,
                          timeout=60, check=False)  # fmt: skip
    assert done.returncode == 130, (done.returncode, done.stderr[-2000:])  # not 3: it did not wait for the loop
    assert marker.read_text() == "killed"  # the embedded children were killed first
    assert "interrupted again: stopped at once" in done.stderr
