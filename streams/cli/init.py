"""``drift init DIR``: scaffold a new cast (personas, propositions, interventions, baselines folder)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

app = typer.Typer()


@app.command("init")
def init(directory: Annotated[Path, typer.Argument(help="New folder for the cast's files.")]) -> None:
    """Create a propositions tree for a new cast, ready to validate, edit and point --propositions at."""
    from engine.bundled import writable_target
    from engine.scaffold import scaffold
    from engine.settings import BUNDLED_PROPOSITIONS

    writable_target(directory, "a new cast", "choose a folder of your own")
    written = scaffold(directory, BUNDLED_PROPOSITIONS)
    typer.echo(f"wrote {len(written)} files under {directory}")
    typer.echo("next:")
    typer.echo(f"  drift validate {directory}                      # check every file")
    typer.echo(f"  drift propositions show --dir {directory} --agent alex -d adherence")
    typer.echo(f"  drift up --propositions {directory}              # gate with the new cast")
