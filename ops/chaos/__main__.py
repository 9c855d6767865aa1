"""``python -m ops.chaos [NAME ...]``: run the reliability scenarios on a private embedded stack, print each
one's figures, exit 1 when a scenario misses its target (0 lost, 0 conflicting, 0 duplicated, 0 unchecked,
0 worker deaths, every bad record dead-lettered with its reason: see RELIABILITY.md).

Each scenario is a module with one entry function ``run(stage) -> figures`` listed in :data:`SCENARIOS`; a
figure named ``ok`` (1 or 0) says whether the scenario met its target.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import shutil
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

from ops.chaos import (
    codecs,
    judge_faults,
    kill_workers,
    oversized,
    postgres_outage,
    restart_checks,
    rolling_restarts,
    strict_payloads,
)
from ops.chaos.common import Figures, Stage
from streams.embedded import EmbeddedStack, start_stack
from streams.store import Store

Scenario = Callable[[Stage], Awaitable[Figures]]

#: name -> entry function, in the order they run.
SCENARIOS: dict[str, Scenario] = {
    "kill-workers": kill_workers.run,
    "judge-faults": judge_faults.run,
    "postgres-outage": postgres_outage.run,
    "restart-checks": restart_checks.run,
    "oversized-records": oversized.run,
    "codecs": codecs.run,
    "strict-payloads": strict_payloads.run,
    "rolling-restarts": rolling_restarts.run,
}


async def run_all(stack: EmbeddedStack, names: list[str], tmp: Path) -> dict[str, Figures]:
    async with await Store.connect(stack.database.url) as store:
        await store.migrate()
    results: dict[str, Figures] = {}
    for name in names:
        stage = Stage(stack.broker.bootstrap, stack.database.url, tmp, stack=stack)
        started = time.monotonic()
        print(f"== {name}", flush=True)
        try:
            figures = await SCENARIOS[name](stage)
        except Exception as exc:  # a scenario that crashes failed its target; the others still run
            figures = {"error": f"{type(exc).__name__}: {exc}", "ok": 0}
        finally:
            stage.close()
        figures["seconds"] = round(time.monotonic() - started, 1)
        for key, value in figures.items():
            print(f"   {key:<40} {value}", flush=True)
        results[name] = figures
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Run the reliability scenarios (make chaos).")
    parser.add_argument("names", nargs="*", help=f"scenarios to run (default: all): {', '.join(SCENARIOS)}")
    parser.add_argument("--keep", action="store_true", help="keep the stack's directory (worker logs) and say where")
    args = parser.parse_args(argv)
    if unknown := [name for name in args.names if name not in SCENARIOS]:
        parser.error(f"unknown scenario(s) {', '.join(unknown)}; choose from {', '.join(SCENARIOS)}")
    logging.basicConfig(level=logging.WARNING)
    # a SIGKILLed worker drops its connections to the fake judge mid-request: expected here, not worth a traceback
    logging.getLogger("aiohttp.server").setLevel(logging.CRITICAL)
    root = Path(tempfile.mkdtemp(prefix="drift-chaos-"))
    root.chmod(0o755)  # PostgreSQL runs as an unprivileged user when started by root
    stack = start_stack(root)
    try:
        results = asyncio.run(run_all(stack, args.names or list(SCENARIOS), root))
    finally:
        stack.stop()
        if args.keep:
            print(f"chaos: worker logs and data kept in {root}")
        else:
            shutil.rmtree(root, ignore_errors=True)
    failed = [name for name, figures in results.items() if not figures.get("ok")]
    print("chaos: " + ("every scenario met its target" if not failed else f"missed the target: {', '.join(failed)}"))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
