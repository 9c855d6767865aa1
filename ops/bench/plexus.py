"""Plexus graph runner: routing overhead per node (without the model's time) and a code node's round trip.

Run from the repository root: ``.venv/bin/python -m ops.bench.plexus``. Merges into ``ops/bench/results.json``:

* ``plexus_routing_per_node_ms`` — per node of a 20-node graph (templates over the state, output aliasing,
  conditions, state bookkeeping), the run's time minus the time spent inside the model, median of 200 items;
* ``plexus_code_node_p50_ms`` / ``_p90_ms`` — one LogicalClassifier call through the user-code sandbox
  (bubblewrap, seccomp, rlimits, JSON both ways), 40 calls;
* ``plexus_sandbox_floor_p50_ms`` — measured in the same run beside it: the sandbox starting ``python -I -S -c
  pass`` (the floor any out-of-process code node pays on this machine);
* ``plexus_limits_only_floor_p50_ms`` — the same interpreter start with the rlimits only (no bubblewrap), so
  the sandbox's own cost is the difference of the two floors.
"""

from __future__ import annotations

import asyncio
import statistics
import time
from collections.abc import Awaitable

from engine.formats.bwrap import interpreter, python_runtime
from engine.formats.plexus.code import CodeRequest, run_code
from engine.formats.plexus.graph import Item, run_score
from engine.formats.plexus.model import Score
from engine.formats.plexus.nodes import NodeContext
from engine.formats.sandbox import Limits, run_limited
from engine.formats.usercode import STRICT, run_user_code
from engine.llm.base import Completion, CompletionRequest
from ops.bench.common import RESULTS_PATH, machine_info, merge_results

NODES = 20
ITEMS = 200
CODE_CALLS = 40
CODE = "def score(parameters, input):\n    return Score.Result(value='Yes', metadata={'explanation': 'ok'})\n"


class InstantModel:
    """Answers at once and counts the time spent inside it, so it can be subtracted."""

    name = "bench:instant"

    def __init__(self) -> None:
        self.spent = 0.0

    async def complete(self, request: CompletionRequest) -> Completion:
        started = time.perf_counter()
        reply = Completion("Some reasoning about the message.\nYes", self.name)
        self.spent += time.perf_counter() - started
        return reply


def _graph() -> Score:
    nodes = [
        {
            "name": f"n{i}",
            "class": "YesOrNoClassifier",
            "system_message": "You check one step of the persona.",
            "user_message": "Message: {{ text }}\nAgent: {{ metadata.agent }}\nBefore: {{ classification }}",
            "conditions": [{"value": "No", "node": "END", "output": {"value": "No"}}],
            "edge": {"node": f"n{i + 1}" if i + 1 < NODES else "END", "output": {f"step_{i}": "classification"}},
        }
        for i in range(NODES)
    ]
    return Score.model_validate({"name": "Bench", "graph": nodes, "output": {"value": "classification"}})


async def routing() -> float:
    score = _graph()
    per_node = []
    for index in range(ITEMS):
        model = InstantModel()
        item = Item(f"message number {index} from the bench", {"agent": "dwight"})
        started = time.perf_counter()
        result = await run_score(score, item, NodeContext(model), {})
        elapsed = time.perf_counter() - started - model.spent
        assert result.value == "Yes" and len(result.path) == NODES, result
        per_node.append(elapsed / NODES * 1000)
    return statistics.median(per_node)


async def _timed(job: Awaitable[object]) -> float:
    started = time.perf_counter()
    await job
    return (time.perf_counter() - started) * 1000


async def code_node() -> tuple[float, float, float, float]:
    request = CodeRequest("score", CODE, "score", {}, "text", {"agent": "dwight"}, {"classification": "Yes"})
    STRICT.require("the benchmark")  # the sandbox must be there: its figures are the point
    argv = [str(interpreter()), "-I", "-S", "-c", "pass"]
    calls, floor, bare = [], [], []
    for _ in range(CODE_CALLS):  # interleaved, so all three see the same machine load
        started = time.perf_counter()
        answer = await run_code(request)
        calls.append((time.perf_counter() - started) * 1000)
        assert answer["value"] == "Yes"
        floor.append(await _timed(run_user_code(argv, sandbox=STRICT, runtime=python_runtime(), folder=None,
                                                limits=Limits())))  # fmt: skip
        bare.append(await _timed(run_limited(argv)))
    calls.sort()
    return statistics.median(calls), calls[int(0.9 * len(calls))], statistics.median(floor), statistics.median(bare)


async def main() -> None:
    per_node = await routing()
    p50, p90, floor, bare = await code_node()
    results = {
        "plexus_routing_per_node_ms": per_node,
        "plexus_code_node_p50_ms": p50,
        "plexus_code_node_p90_ms": p90,
        "plexus_sandbox_floor_p50_ms": floor,
        "plexus_limits_only_floor_p50_ms": bare,
    }
    merge_results(RESULTS_PATH, results)
    info = machine_info()
    print(f"{info['cpu']}, {info['cores']} cores, Python {info['python']}")
    for key, value in results.items():
        print(f"{key:<32} {value:10.3f}")


if __name__ == "__main__":
    asyncio.run(main())
