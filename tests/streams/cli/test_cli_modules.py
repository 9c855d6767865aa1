"""A command line imports only the module of its command (streams.cli.build_app): the table of top-level
commands matches the modules, every command is reachable through its own partial build, and importing the
package registers nothing."""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest
import typer
from typer.testing import CliRunner

from streams import cli


def _names(sub: typer.Typer) -> set[str]:
    return {command.name or command.callback.__name__.replace("_", "-") for command in sub.registered_commands
            if command.callback is not None}  # fmt: skip


def test_the_top_level_table_names_every_command_of_the_modules_without_a_group() -> None:
    ungrouped = {module for module, group, _ in cli._COMMAND_MODULES if group is None}
    assert ungrouped == set(cli.TOP_LEVEL)
    for module in ungrouped:
        sub = importlib.import_module(f"streams.cli.{module}").app
        assert _names(sub) == set(cli.TOP_LEVEL[module]), module


@pytest.mark.parametrize(
    ("argv", "modules"),
    [
        (["worker", "--prefix", "x."], {"service"}),
        (["-v", "stats", "--from-database"], {"ops"}),
        (["shadow", "report", "candidate"], {"shadow", "shadow_report"}),
        (["propositions", "score"], {"propositions", "score"}),
        (["config", "show", "a"], {"admin"}),
        (["--help"], None),
        ([], None),
        (["no-such-command"], None),
    ],
)
def test_a_command_line_names_only_the_modules_it_needs(argv: list[str], modules: set[str] | None) -> None:
    assert cli.modules_for(argv) == modules


def test_every_command_runs_its_help_from_its_own_partial_build() -> None:
    whole = cli.build_app()
    runner = CliRunner()
    words = [g.name for g in whole.registered_groups if g.name] + sorted(set().union(*cli.TOP_LEVEL.values()))
    for word in words:
        result = runner.invoke(cli.build_app([word]), [word, "--help"])
        assert result.exit_code == 0, (word, result.output)
        assert "Usage: drift " + word in " ".join(result.output.split()), (word, result.output)
    shadow = cli.build_app(["shadow"])
    assert {"report", "start"} <= _names(next(g.typer_instance for g in shadow.registered_groups
                                             if g.name == "shadow" and g.typer_instance))  # fmt: skip


def test_importing_the_package_imports_no_command_module_and_a_worker_only_its_own() -> None:
    probe = (
        "import sys, streams.cli as c; before = sorted(m for m in sys.modules if m.startswith('streams.cli.')); "
        "c.build_app(['worker']); after = {m for m in sys.modules if m.startswith('streams.cli.')}; "
        "print(before, 'streams.cli.service' in after, 'streams.cli.experiment' in after, 'streams.cli.eval' in after)"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=60)
    assert done.stdout.split() == ["[]", "True", "False", "False"], done.stdout + done.stderr
