"""``drift check --agent ID --text T``: send one draft to a running gate and print its verdict.

The shell counterpart of :meth:`streams.client.GateClient.check` (like ``faust send``): handy to try a
configuration, a persona or a judge from the terminal. Exit 0 when the gate commits the text, 1 when it asks
for a retry or rejects it, 2 on a usage error or when no verdict arrives within ``--timeout``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from streams.cli.common import BrokerOpt, PrefixOpt, run, settings_from

if TYPE_CHECKING:
    from streams.wire.payloads import Verdict

app = typer.Typer()


@app.command("check")
def check(
    agent: Annotated[str, typer.Option("--agent", help="Agent id the draft speaks for.")],
    text: Annotated[str, typer.Option("--text", help="The draft's text.")],
    channel: Annotated[str | None, typer.Option("--channel", help="Channel of the conversation.")] = None,
    run_id: Annotated[str | None, typer.Option("--run-id", help="Run (session) id.")] = None,
    timeout: Annotated[float, typer.Option("--timeout", min=0.1, help="Seconds to wait for the verdict.")] = 30.0,
    as_json: Annotated[bool, typer.Option("--json", help="Print the verdict as JSON.")] = False,
    broker: BrokerOpt = None,
    prefix: PrefixOpt = None,
) -> None:
    """Gate one draft: print the decision, each check's score and the feedback (exit 0 commit, 1 otherwise)."""
    from streams.client import GateClient

    settings = settings_from(broker=broker, prefix=prefix)
    _flag_unknown(agent, settings.propositions_dir)

    async def go() -> Verdict:
        async with GateClient(settings=settings, timeout_s=timeout) as client:
            return await client.check(agent_id=agent, text=text, channel=channel, run_id=run_id)

    verdict = run(go())
    if as_json:
        typer.echo(json.dumps(verdict.model_dump(mode="json"), indent=2))
    else:
        _print(verdict)
    if verdict.decision != "commit":
        raise typer.Exit(1)


def _flag_unknown(agent: str, propositions_dir: Path) -> None:
    """A warning, before the draft is sent, for an agent id without a persona file: most often a typo, which
    the gate would register as a new agent and judge against the defaults only."""
    from engine.personas import persona_files
    from engine.propositions.models import suggestion

    known = sorted(p.stem for p in persona_files(Path(propositions_dir)))
    if agent not in known:
        typer.echo(
            f"drift: warning: no persona for agent {agent!r} in {propositions_dir} (the gate registers it as a new "
            f"agent and judges it against the default propositions only){suggestion(agent, known)}",
            err=True,
        )


def _print(verdict: Verdict) -> None:
    from engine.display import outcome_label
    from engine.judges.offline import LIMITS, NAME

    if verdict.judge == NAME:
        typer.echo(f"note: {LIMITS}", err=True)
    outcome = outcome_label(verdict.outcome)
    typer.echo(f"{verdict.agent_id}: {verdict.decision} ({outcome}; judge {verdict.judge or '-'})")
    for name, score in verdict.scores.items():
        state = "timed out" if score.timed_out else ("passed" if score.passed else "failed")
        typer.echo(f"  {name:<12} {score.score:.2f} / threshold {score.threshold:.2f}  {state}")
    if verdict.similarity is not None:
        s = verdict.similarity
        typer.echo(f"  {'similarity':<12} {s.score:.2f} / max {s.threshold:.2f}  {'passed' if s.passed else 'failed'}")
    if verdict.feedback:
        typer.echo("feedback:")
        for line in verdict.feedback.splitlines():
            typer.echo(f"  {line}")
    if not verdict.scores and verdict.similarity is None and verdict.outcome == "passed":
        agent = verdict.agent_id
        typer.echo(
            f"drift: note: every check is off for {agent}: the gate passes whatever it says; turn checks on with "
            f"'drift config set {agent} gate_adherence_enabled=true gate_similarity_enabled=true' (keys: "
            "docs/reference.md)",
            err=True,
        )
