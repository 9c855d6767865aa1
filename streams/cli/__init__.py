"""The ``drift`` command line: one entry point, one sub-command module per concern.

Command modules import only typer at module level; heavy imports (faust, asyncpg, anthropic) happen inside
the command functions so ``drift --help`` stays fast. A :class:`engine.errors.DriftError` ends the command
with its message on one line (no traceback) and exit code 2.
"""

from __future__ import annotations

import importlib
import os
import sys
import traceback

import typer

from engine.errors import DriftError

app = typer.Typer(
    name="drift",
    help="persona-drift: gate, evaluate and regression-test the personas of multi-agent LLM systems.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

#: (module under streams.cli, command group name or None for top-level commands)
_COMMAND_MODULES: tuple[tuple[str, str | None, str], ...] = (
    ("propositions", "propositions", "app"),
    ("score", "propositions", "app"),
    ("service", None, "app"),
    ("admin", "topics", "topics_app"),
    ("admin", "db", "db_app"),
    ("admin", "config", "config_app"),
    ("eval", "eval", "app"),
    ("demo", None, "app"),
    ("ops", None, "app"),
    ("validate", None, "app"),
    ("check", None, "app"),
    ("init", None, "app"),
    ("agents", "agents", "app"),
    ("alerts", "alerts", "app"),
    ("shadow", "shadow", "app"),
    ("experiment", "experiment", "app"),
    ("view", None, "app"),
    ("metareason", "metareason", "app"),
    ("plexus", "plexus", "app"),
    ("agentv", "agentv", "app"),
    ("population", "population", "app"),
    ("simulate", None, "app"),
    ("shadow_report", "shadow", "app"),  # `drift shadow report`, joining the shadow group wherever it starts
)


def _register() -> None:
    from streams.cli.helpfmt import flags_without_type

    flags_without_type()
    groups: dict[str, typer.Typer] = {}
    for module_name, group, attribute in _COMMAND_MODULES:
        module = importlib.import_module(f"streams.cli.{module_name}")  # a missing module is a packaging bug
        sub: typer.Typer = getattr(module, attribute)
        if group is None:
            app.registered_commands.extend(sub.registered_commands)
        elif group in groups:
            groups[group].registered_commands.extend(sub.registered_commands)
        else:
            groups[group] = sub
            app.add_typer(sub, name=group)


@app.callback(invoke_without_command=True)
def _root(
    version: bool = typer.Option(False, "--version", help="Print the installed version and exit.", is_eager=True),
) -> None:
    if version:
        from importlib.metadata import version as installed

        typer.echo(f"persona-drift {installed('persona-drift')}")
        raise typer.Exit(0)


_register()


def main() -> None:
    """Console entry point. Whatever ends the command, no database or broker password is printed."""
    from engine.redaction import install_log_masking, mask_text
    from streams.cli.common import urls_in_use

    urls = urls_in_use(sys.argv[1:], os.environ)
    install_log_masking(urls)
    try:
        app()
    except DriftError as exc:
        for line in str(exc).splitlines() or [type(exc).__name__]:
            print(f"drift: {mask_text(line, urls)}", file=sys.stderr)
        sys.exit(2)
    except KeyboardInterrupt:
        sys.exit(130)
    except Exception as exc:
        from streams.cli.common import missing_schema

        schema = missing_schema(exc, sys.argv[1:], os.environ)
        if schema is not None:  # a database that was never migrated: a user's step, not a bug
            print(f"drift: {mask_text(schema, urls)}", file=sys.stderr)
            sys.exit(2)
        # a bug: keep the traceback, without the credentials a driver may have put in it
        print(mask_text(traceback.format_exc(), urls), file=sys.stderr, end="")
        sys.exit(1)
