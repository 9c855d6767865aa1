"""``drift population generate``: the three-stage population factory (engine/simulation/population.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from streams.cli.common import run, settings_from

app = typer.Typer(
    help="Populations for simulations: generate N personas of a profile with the three-stage factory.",
    no_args_is_help=True,
)

ActorOpt = Annotated[
    str | None,
    typer.Option("--actor", help="anthropic[:MODEL] | openai-compatible[:MODEL] | scripted[:RULES.yaml] "
                 "(default: anthropic when ANTHROPIC_API_KEY is set, else scripted)."),
]  # fmt: skip


@app.command("generate")
def generate(
    profile: Annotated[str, typer.Option(help="average-customers | difficult-customers | political-compass | FILE")],
    n: Annotated[int, typer.Option("--n", min=1, max=5000, help="How many personas.")],
    out: Annotated[Path, typer.Option(help="Output folder (a rerun into it resumes).")],
    seed: Annotated[int, typer.Option(help="Shuffles the flattened plan: same seed, same population.")] = 42,
    actor: ActorOpt = None,
    concurrency: Annotated[int, typer.Option(min=1, help="Persona calls in flight.")] = 8,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Print the calls and a token bound; call nothing.")
    ] = False,
) -> None:
    """Generate N personas of a profile into OUT/personas (resumable; every stage kept in OUT/stages)."""
    from engine.bundled import writable_target
    from engine.llm.factory import make_text_model
    from engine.simulation.population import Factory
    from engine.simulation.profiles import load_profile
    from engine.simulation.scripted_population import ScriptedPopulationModel

    writable_target(out, "a population", "pass --out a folder of your own")
    settings = settings_from(actor=actor)
    chosen = load_profile(profile)
    if dry_run:
        typer.echo(f"profile {chosen.name} · n {n} · seed {seed} · actor {settings.effective_actor()}")
        typer.echo(f"calls: {Factory.planned_calls(n)} (2 + 2N) · tokens at most {Factory.token_bound(n):,}")
        return
    model = make_text_model(settings.effective_actor(), settings, scripted=ScriptedPopulationModel)
    factory = Factory(model, chosen, n, seed, out, concurrency=concurrency, on_progress=typer.echo)
    typer.echo(f"generating {n} personas of {chosen.name} with {model.name} into {out}")
    personas = run(factory.run())
    usage = factory.usage
    typer.echo(f"done: {len(personas)} personas in {out / 'personas'} · {factory.calls} calls this run · "
               f"{usage.input_tokens} in / {usage.output_tokens} out tokens · model {model.name}")  # fmt: skip
