"""``drift eval request AGENT``: ask the running service for an on-demand evaluation of one agent.

The shell counterpart of :meth:`streams.client.GateClient.request_evaluation` / ``evaluate``: publishes a
``manual`` request on ``evaluation-requests``; a worker evaluates the agent over its stored history since its last
completed run and records the run in ``evaluation_runs`` (what the view's agent chart and Runs page show). With
``--wait`` it prints the run's summary from ``evaluations``. Exit 0 when the request was sent (with ``--wait``:
when the run completed), 1 when the run failed, 2 on a usage error, an unreachable broker, or no summary within
``--timeout``.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Annotated

import typer

from streams.cli.common import BrokerOpt, PrefixOpt, run, settings_from

if TYPE_CHECKING:
    from engine.settings import Settings
    from streams.wire.payloads import EvaluationRequest, EvaluationSummary


def request_command(
    agent: Annotated[str, typer.Argument(help="The agent to evaluate.", show_default=False)],
    dimensions: Annotated[
        str | None, typer.Option("--dimensions", help="Comma-separated dimensions (default: the evaluation ones).")
    ] = None,
    wait: Annotated[bool, typer.Option("--wait", help="Wait for the run's summary and print it.")] = False,
    timeout: Annotated[
        float | None,
        typer.Option("--timeout", min=0.1, help="Seconds --wait waits (default DRIFT_EVAL_DEADLINE_S)."),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the request (or the summary) as JSON.")] = False,
    broker: BrokerOpt = None,
    prefix: PrefixOpt = None,
) -> None:
    """Ask the service to evaluate AGENT now; with --wait, print the run's scores (exit 1 if it failed)."""
    settings = settings_from(broker=broker, prefix=prefix)
    names = [part.strip() for part in (dimensions or "").split(",") if part.strip()] or None
    if not wait:
        request = run(_request(settings, agent, names))
        if as_json:
            typer.echo(json.dumps(request.model_dump(mode="json"), indent=2))
            return
        typer.echo(
            f"requested an evaluation of {agent} (request {request.request_id}): a worker records the run in "
            "evaluation_runs (drift view: Agents, Runs); add --wait to print its summary"
        )
        return
    summary = run(_evaluate(settings, agent, names, settings.eval_deadline_s if timeout is None else timeout))
    if as_json:
        typer.echo(json.dumps(summary.model_dump(mode="json"), indent=2))
    else:
        _print(summary)
    if summary.status != "completed":
        raise typer.Exit(1)


async def _request(settings: Settings, agent: str, dimensions: list[str] | None) -> EvaluationRequest:
    from streams.client import GateClient

    async with GateClient(settings=settings) as client:
        return await client.request_evaluation(agent_id=agent, dimensions=dimensions)


async def _evaluate(settings: Settings, agent: str, dimensions: list[str] | None, timeout: float) -> EvaluationSummary:
    from streams.client import GateClient

    async with GateClient(settings=settings, timeout_s=timeout) as client:
        return await client.evaluate(agent_id=agent, dimensions=dimensions)


def _print(summary: EvaluationSummary) -> None:
    head = f"{summary.agent_id}: evaluation {summary.status} (run {summary.evaluation_run_id}"
    typer.echo(f"{head}, {summary.sample_size} messages)")
    for name, score in summary.dimensions.items():
        typer.echo(f"  {name:<16} {score:.2f}")
    if summary.overall_score is not None:
        typer.echo(f"  {'overall':<16} {summary.overall_score:.2f}")
    if summary.error:
        typer.echo(f"error: {summary.error}")
