"""The ``drift`` command line: one entry point, one sub-command module per concern.

Command modules import only typer at module level; heavy imports (faust, asyncpg, anthropic) happen inside
the command functions so ``drift --help`` stays fast, and a command line imports only the module of its command
(:func:`build_app`; nothing is registered at import). A :class:`engine.errors.DriftError` ends the command
with its message on one line (no traceback) and exit code 2.
"""

from __future__ import annotations

import importlib
import os
import sys
import traceback
from collections.abc import Sequence
from functools import cache

import typer

from engine.errors import DriftError

#: (module under streams.cli, command group name or None for top-level commands, the module's Typer attribute)
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

#: The top-level commands of the modules registered without a group, so a command line imports only the module
#: it runs (tests/streams/cli/test_cli_modules.py checks this table against the modules).
TOP_LEVEL: dict[str, tuple[str, ...]] = {
    "service": ("up", "worker", "sinks"),
    "demo": ("demo",),
    "ops": ("tail", "replay", "stats"),
    "validate": ("validate",),
    "check": ("check",),
    "init": ("init",),
    "view": ("view",),
    "simulate": ("simulate",),
}


def modules_for(argv: Sequence[str]) -> set[str] | None:
    """The command modules a command line needs (its first word names a group or a top-level command), or None
    for all of them: no command word (``drift``, ``drift --help``, ``drift --version``) or one nobody knows
    (click then lists every command in its error)."""
    word = next((arg for arg in argv if not arg.startswith("-")), None)
    if word is None:
        return None
    wanted = {module for module, group, _ in _COMMAND_MODULES if group == word or word in TOP_LEVEL.get(module, ())}
    return wanted or None


def build_app(argv: Sequence[str] | None = None) -> typer.Typer:
    """The ``drift`` command: every command module, or (``argv`` given) only those :func:`modules_for` names.
    Importing a command module costs up to half a second (its typed options import the settings, the store,
    the judges); a worker or a one-shot command pays only for its own."""
    from streams.cli.helpfmt import flags_without_type

    flags_without_type()
    root = typer.Typer(
        name="drift",
        help="persona-drift: gate, evaluate and regression-test the personas of multi-agent LLM systems.",
        no_args_is_help=True,
        add_completion=False,
        pretty_exceptions_enable=False,
    )
    root.callback(invoke_without_command=True)(_root)
    wanted = None if argv is None else modules_for(argv)
    groups: dict[str, typer.Typer] = {}
    for module_name, group, attribute in _COMMAND_MODULES:
        if wanted is not None and module_name not in wanted:
            continue
        module = importlib.import_module(f"streams.cli.{module_name}")  # a missing module is a packaging bug
        sub: typer.Typer = getattr(module, attribute)
        if group is None:
            root.registered_commands.extend(sub.registered_commands)
        elif group in groups:  # a second module of a group: its commands join the first module's Typer, once
            known = groups[group].registered_commands
            known.extend(command for command in sub.registered_commands if command not in known)
        else:
            groups[group] = sub
            root.add_typer(sub, name=group)
    return root


def _root(
    version: bool = typer.Option(False, "--version", help="Print the installed version and exit.", is_eager=True),
) -> None:
    if version:
        from importlib.metadata import version as installed

        typer.echo(f"persona-drift {installed('persona-drift')}")
        raise typer.Exit(0)


@cache
def _whole() -> typer.Typer:
    return build_app()


def __getattr__(name: str) -> typer.Typer:
    """``streams.cli.app``: the whole command (built on first use, not at import), for typer's test runner."""
    if name == "app":
        return _whole()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def main() -> None:
    """Console entry point. Whatever ends the command, no database or broker password is printed."""
    from engine.redaction import install_log_masking, mask_text
    from streams.cli.common import urls_in_use

    urls = urls_in_use(sys.argv[1:], os.environ)
    install_log_masking(urls)
    try:
        build_app(sys.argv[1:])()
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
