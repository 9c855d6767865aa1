"""Every command that opens the database gives up after DRIFT_CONNECT_TIMEOUT_S (issue 29, finding 3's class):
no ``Store.connect`` in the command line or the client SDK falls back to the store's 60-second default."""

from __future__ import annotations

import ast

from engine.settings import REPO_ROOT

#: ``drift demo`` opens the database of the private stack it has just started itself.
OWN_STACK = {"streams/cli/demo.py"}


def _connects_without_timeout() -> list[str]:
    found = []
    for top in ("streams/cli", "streams/client"):
        for path in sorted((REPO_ROOT / top).rglob("*.py")):
            name = str(path.relative_to(REPO_ROOT))
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if (
                    isinstance(node, ast.Call)
                    and isinstance(node.func, ast.Attribute)
                    and node.func.attr == "connect"
                    and isinstance(node.func.value, ast.Name)
                    and node.func.value.id == "Store"
                    and not any(k.arg == "timeout_s" for k in node.keywords)
                    and name not in OWN_STACK
                ):
                    found.append(f"{name}:{node.lineno}")
    return found


def test_every_command_connects_to_the_database_within_the_connect_timeout() -> None:
    assert _connects_without_timeout() == []
