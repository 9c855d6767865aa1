"""``drift validate PATH…``: check any YAML file of the project, whatever its kind.

Each file is classified by its contents (proposition set, interventions, persona, and the evaluation formats
once installed) and validated by that kind's own rules; folders are searched for ``*.yaml`` / ``*.yml``.
Prints ``ok  KIND  FILE`` per good file and ``FILE:LINE: field.path: message`` per problem; exit 2 when any
file has a problem.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

app = typer.Typer()


@app.command("validate")
def validate(
    paths: Annotated[list[Path], typer.Argument(help="Files or folders to validate.", show_default=False)],
) -> None:
    """Validate YAML files of any kind drift knows (propositions, interventions, personas, formats)."""
    from engine.errors import ConfigurationError
    from engine.formats.registry import expand, validate_path

    files = expand(paths)
    missing = [p for p in files if not p.exists()]
    if missing:
        raise ConfigurationError(f"no such file: {missing[0]}")
    if not files:
        raise ConfigurationError("no YAML files found")
    failed = 0
    for path in files:
        result = validate_path(path)
        if result.ok and result.kind is not None:
            typer.echo(f"ok  {result.kind.name:<14} {path}")
            continue
        failed += 1
        for issue in result.issues:
            typer.echo(str(issue), err=True)
    if failed:
        raise typer.Exit(2)
