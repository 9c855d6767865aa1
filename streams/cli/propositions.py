"""``drift propositions``: check proposition trees and inspect the merged set of an agent."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from engine.settings import BUNDLED_PROPOSITIONS

if TYPE_CHECKING:
    from engine.errors import ConfigurationError, PropositionFileError
    from engine.models import Dimension
    from engine.propositions import PropositionSet

app = typer.Typer(
    help="Proposition files: validate a tree, show the merged propositions of an agent.",
    no_args_is_help=True,
)

_DIR_ENV = "DRIFT_PROPOSITIONS_DIR"
_DIR_HELP = f"Propositions directory (env {_DIR_ENV}; default: the bundled set)."

DirArg = Annotated[Path | None, typer.Argument(help=_DIR_HELP, envvar=_DIR_ENV, show_default=False, metavar="[DIR]")]
DirOpt = Annotated[Path | None, typer.Option("--dir", "--propositions", help=_DIR_HELP, envvar=_DIR_ENV)]
DimensionOpt = Annotated[
    str,
    typer.Option(
        "--dimension",
        "-d",
        help="Dimension: adherence, consistency, fluency, convergence, ideas_quantity or suitability.",
    ),
]
AgentOpt = Annotated[
    str | None,
    typer.Option("--agent", "-a", help="Agent id (the name of its files); omit to show the defaults only."),
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print the merged set as JSON instead of a table.")]
ActionOpt = Annotated[
    bool,
    typer.Option(
        "--action",
        help="Show the gate's action-level claims (the 'action' sections) instead of the evaluation claims.",
    ),
]


def _fail(message: str) -> ConfigurationError:
    """A usage error, raised: ``main()`` prints it as the one ``drift: …`` line and exits 2."""
    from engine.errors import ConfigurationError

    return ConfigurationError(message)


def _fail_issues(exc: PropositionFileError) -> typer.Exit:
    for issue in exc.issues:
        typer.echo(str(issue), err=True)
    return typer.Exit(2)


def _directory(directory: Path | None) -> Path:
    root = BUNDLED_PROPOSITIONS if directory is None else directory
    if not root.is_dir():
        raise _fail(f"no such propositions directory: {root}")
    return root


def _dimension(value: str) -> Dimension:
    from engine.models import Dimension
    from engine.propositions.models import suggestion

    try:
        return Dimension(value.strip().lower())
    except ValueError:
        names = [d.value for d in Dimension]
        hint = suggestion(value, names) or f"; choose one of {', '.join(names)}"
        raise _fail(f"unknown dimension '{value}'{hint}") from None


def tree_problems(root: Path) -> tuple[Any, list[Any], int]:
    """The tree's report, its problems (every file, each agent's merge, the interventions) and how many
    interventions it holds: what ``drift propositions validate`` checks (``drift shadow start`` too)."""
    from engine.errors import PropositionFileError
    from engine.interventions import load_interventions
    from engine.proposition_tree import check_tree

    report = check_tree(root)
    issues = list(report.issues)
    interventions = 0
    if (root / "interventions").is_dir():
        try:
            interventions = len(load_interventions(root / "interventions", root))
        except PropositionFileError as exc:
            issues.extend(exc.issues)
    return report, list(dict.fromkeys(issues)), interventions  # a problem two loaders meet is one problem


@app.command()
def validate(directory: DirArg = None) -> None:
    """Validate every proposition, persona and intervention file of DIR, including each agent's merge with the
    defaults.

    Prints one FILE:LINE: field.path: message line per problem on stderr and exits 2, or a summary.
    """
    root = _directory(directory)
    report, issues, interventions = tree_problems(root)
    if issues:
        for issue in issues:
            typer.echo(str(issue), err=True)
        typer.echo(f"{len(issues)} problem(s) in {report.files} files", err=True)
        raise typer.Exit(2)
    typer.echo(f"ok: {report.files} files, {report.propositions} propositions, {interventions} interventions")


@app.command()
def show(
    dimension: DimensionOpt,
    agent: AgentOpt = None,
    directory: DirOpt = None,
    as_json: JsonOpt = False,
    action: ActionOpt = False,
) -> None:
    """Show the merged proposition set of one agent and dimension: its settings and every proposition."""
    from engine.errors import PropositionFileError
    from engine.propositions import load_set

    root = _directory(directory)
    chosen = _dimension(dimension)
    try:
        merged = load_set(root, chosen, agent, action=action)
    except PropositionFileError as exc:
        raise _fail_issues(exc) from None
    if as_json:
        typer.echo(json.dumps(_as_json(merged), indent=2, ensure_ascii=False))
    else:
        _print_table(merged)
    if agent and not _known(agent, root, merged.sources):
        from streams.cli.agents import note_unknown_agent

        note_unknown_agent(agent, f"no persona or propositions file of its own in {root}: defaults shown")
    if merged.is_empty:
        who = f"agent '{agent}'" if agent else "the defaults"
        typer.echo(f"note: no propositions for {chosen.value} and {who} in {root}", err=True)


def _known(agent: str, root: Path, sources: Any) -> bool:
    from streams.cli.agents import has_persona

    return has_persona(agent, root) or any(Path(source).stem == agent for source in sources)


def _as_json(merged: PropositionSet) -> dict[str, Any]:
    from engine.propositions import ACTION_LEVEL_WINDOW_DEFAULTS, EVALUATION_WINDOW_DEFAULTS

    data = merged.model_dump(mode="json")
    data["effective_windows"] = {
        "evaluation": _window(merged, EVALUATION_WINDOW_DEFAULTS),
        "action": _window(merged, ACTION_LEVEL_WINDOW_DEFAULTS),
    }
    return data


def _window(merged: PropositionSet, defaults: Any) -> dict[str, int]:
    window = merged.window(defaults)
    return {"first_n": window.first_n, "last_n": window.last_n}


def _setting_rows(merged: PropositionSet) -> list[tuple[str, str]]:
    from engine.propositions import ACTION_LEVEL_WINDOW_DEFAULTS, EVALUATION_WINDOW_DEFAULTS

    def size(value: int | None, key: str) -> str:
        if value is not None:
            return str(value)
        evaluation, action = (
            getattr(EVALUATION_WINDOW_DEFAULTS, key),
            getattr(ACTION_LEVEL_WINDOW_DEFAULTS, key),
        )
        return f"unset (evaluation default {evaluation}, action default {action})"

    return [
        ("dimension", merged.dimension.value),
        ("agent_id", merged.agent_id or "(defaults only)"),
        ("include_personas", str(merged.include_personas).lower()),
        ("hard", str(merged.hard).lower()),
        ("target_type", merged.target_type.value),
        ("first_n", size(merged.first_n, "first_n")),
        ("last_n", size(merged.last_n, "last_n")),
        ("sources", ", ".join(merged.sources) or "(none)"),
    ]


def _print_table(merged: PropositionSet) -> None:
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    console = Console()
    settings = Table(show_header=False, box=None)
    for key, value in _setting_rows(merged):
        settings.add_row(f"[bold]{key}[/bold]", escape(value))
    console.print(settings)
    table = Table(title=f"{len(merged.propositions)} propositions", show_lines=True, expand=True)
    table.add_column("id", overflow="fold", ratio=3)
    table.add_column("weight", justify="right")
    table.add_column("flags", overflow="fold", ratio=2)
    table.add_column("claim / recommendation", overflow="fold", ratio=6)
    for p in merged.propositions:
        flags = [name for name in ("inverted", "double_check") if getattr(p, name)]
        if p.precondition:
            flags.append(f"only if {p.precondition}")
        text = escape(p.claim)
        if p.recommendations_for_improvement:
            text += f"\n[dim]-> {escape(p.recommendations_for_improvement)}[/dim]"
        table.add_row(escape(p.id), f"{p.weight:g}", escape("\n".join(flags)), text)
    console.print(table)
