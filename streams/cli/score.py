"""``drift propositions score``: judge one message against an agent's merged proposition set."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer

from streams.cli.common import JudgeOpt, run, settings_from

app = typer.Typer()


@app.command("score")
def score(
    agent: Annotated[str, typer.Option("--agent", "-a", help="Agent id (the name of its files).")],
    dimension: Annotated[str, typer.Option("--dimension", "-d", help="Dimension to score.")],
    message: Annotated[str, typer.Option("--message", "-m", help="The message (action) to judge.")],
    agent_name: Annotated[
        str | None, typer.Option("--agent-name", help="Display name (default: persona name).")
    ] = None,
    directory: Annotated[
        Path | None, typer.Option("--dir", "--propositions", help="Propositions directory (default: bundled).")
    ] = None,
    judge: JudgeOpt = None,
    strategy: Annotated[str, typer.Option(help="batch (up to 10 claims a call) or individual.")] = "batch",
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Score MESSAGE as the agent's action on one dimension; prints the weighted score and each proposition."""
    from engine.judges.factory import make_judge
    from engine.library import PropositionLibrary
    from engine.models import Dimension
    from engine.propositions import ACTION_LEVEL_WINDOW_DEFAULTS
    from engine.scoring import JudgeStrategy, ScoringTarget, score_dimension

    settings = settings_from(judge=judge, propositions=directory)
    library = PropositionLibrary(settings.propositions_dir)
    dim = _dimension(dimension, Dimension)
    pset = library.pset(agent, dim)
    persona = library.persona(agent)
    name = agent_name or (persona.name if persona else agent)
    target = ScoringTarget(target_name=name, agent_id=agent, persona=persona, action=message,
                           variables={"agent_name": name, "action": message})  # fmt: skip
    judge_impl = make_judge(settings.judge, settings)
    result = run(
        score_dimension(judge_impl, pset, target, window_defaults=ACTION_LEVEL_WINDOW_DEFAULTS,
                        strategy=JudgeStrategy(strategy))
    )  # fmt: skip
    payload = _payload(agent, result)
    if as_json:
        typer.echo(json.dumps(payload, indent=2))
        return
    _print_table(payload)


def _payload(agent: str, result: Any) -> dict[str, Any]:
    return {
        "dimension": result.dimension.value,
        "agent_id": agent,
        "score": round(result.score, 4),
        "judge": result.judge,
        "propositions": [
            {"id": p.id, "claim": p.claim, "raw": p.raw, "score": round(p.score, 4), "weight": p.weight,
             "skipped": p.skipped, "reasoning": p.reasoning}
            for p in result.propositions
        ],
    }  # fmt: skip


def _dimension(value: str, enum: Any) -> Any:
    from engine.errors import ConfigurationError

    try:
        return enum(value)
    except ValueError:
        choices = ", ".join(d.value for d in enum)
        raise ConfigurationError(f"unknown dimension {value!r} (choose from {choices})") from None


def _print_table(payload: dict[str, Any]) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(
        title=f"{payload['agent_id']} · {payload['dimension']} = {payload['score']:.2f}  ({payload['judge']})"
    )
    for column in ("proposition", "raw", "score", "weight", "claim"):
        table.add_column(column)
    for p in payload["propositions"]:
        raw = "skip" if p["skipped"] else str(p["raw"])
        table.add_row(p["id"], raw, f"{p['score']:.2f}", f"{p['weight']:g}", p["claim"])
    Console().print(table)
