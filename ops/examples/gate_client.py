"""A runnable example of the client SDK: check one draft, then run a converse loop with a toy regenerator.

    drift up &                                      # or any running gate (see docs/operations.md)
    python ops/examples/gate_client.py --broker 127.0.0.1:9092 --prefix drift. --agent michael

In a real orchestrator ``regenerate`` calls your LLM with the gate's feedback appended to the prompt; here it
picks the next canned rewrite so the example needs no model. Exit code 0 when the gate answered.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import textwrap
from collections.abc import Callable

from engine.errors import DriftError
from streams.client import GateClient
from streams.wire.payloads import Verdict

REWRITES = (
    "Okay, real talk: I am thrilled about these numbers and I want everyone in the conference room now!",
    "Fine, fine. Here it is with feeling: best quarter ever, and yes, there will be cake.",
)


def scores(verdict: Verdict) -> str:
    parts = [f"{name} {s.score:g}{'' if s.passed else ' (failed)'}" for name, s in verdict.scores.items()]
    return f" [{', '.join(parts)}]" if parts else " [no checks enabled for this agent]"


def toy_regenerator() -> Callable[[str], str]:
    """A regenerate callback: show the feedback it was given and return the next canned rewrite."""
    attempts = iter(REWRITES)

    def regenerate(feedback: str) -> str:
        print("  feedback received:")
        print(textwrap.indent(textwrap.shorten(feedback, 300), "    "))
        return next(attempts, REWRITES[-1])

    return regenerate


async def main(args: argparse.Namespace) -> None:
    async with GateClient(args.broker, prefix=args.prefix, timeout_s=args.timeout) as gate:
        verdict = await gate.check(agent_id=args.agent, text=args.text, channel="example")
        print(f"check: {verdict.decision}/{verdict.outcome}{scores(verdict)}")
        regenerate = toy_regenerator()
        final = await gate.converse(agent_id=args.agent, text=args.text, regenerate=regenerate)
        print(f"converse: {final.decision}/{final.outcome} after {final.attempt} attempt(s){scores(final)}")
        print(f"  committed text: {final.text!r}" if final.decision == "commit" else "  the gate rejected the draft")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="Check a draft with the persona-drift gate.")
    parser.add_argument(
        "--broker", default=None, help="Kafka bootstrap server (default: DRIFT_BROKER or 127.0.0.1:9092)"
    )
    parser.add_argument(
        "--prefix", default=None, help="Topic prefix of the gate (default: DRIFT_TOPIC_PREFIX or drift.)"
    )
    parser.add_argument("--agent", default="michael", help="Agent id of the draft")
    parser.add_argument("--text", default="Per my last email, the quarterly numbers are attached.", help="Draft text")
    parser.add_argument("--timeout", type=float, default=30.0, help="Seconds to wait for each verdict")
    return parser.parse_args(argv)


if __name__ == "__main__":
    try:
        asyncio.run(main(parse_args()))
    except DriftError as exc:
        print(f"gate_client: {exc}", file=sys.stderr)
        sys.exit(2)
