"""pyproject.toml declares every third-party distribution engine/ and streams/ import, each once."""

from __future__ import annotations

import ast
import re
import sys
import tomllib
from importlib.metadata import packages_distributions

from engine.settings import REPO_ROOT

PYPROJECT = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text(encoding="utf-8"))
#: distributions that ship as an exact-pinned part of a declared one (pydantic pins its pydantic-core)
PART_OF = {"pydantic-core": "pydantic"}
#: modules of the operating system's Python, not of ours: engine/formats/seccomp_filter.py runs under /usr/bin/python3
#: with Debian's python3-seccomp (installed by `make sandbox-tools`), never in drift's own environment
SYSTEM_PYTHON = {"seccomp"}
OURS = {"engine", "streams", "persona_drift_propositions", "persona_drift_examples", "persona_drift_simulations"}


def _name(requirement: str) -> str:
    match = re.match(r"[A-Za-z0-9._-]+", requirement)
    assert match is not None, requirement
    name = re.sub(r"[-_.]+", "-", match.group(0)).lower()
    return PART_OF.get(name, name)


def _imported_modules() -> set[str]:
    found: set[str] = set()
    for top in ("engine", "streams"):
        for path in (REPO_ROOT / top).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.Import):
                    found.update(alias.name.partition(".")[0] for alias in node.names)
                elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                    found.add(node.module.partition(".")[0])
    return found - OURS - SYSTEM_PYTHON - set(sys.stdlib_module_names)


def test_no_dependency_is_declared_twice() -> None:
    names = [_name(r) for r in PYPROJECT["project"]["dependencies"]]
    assert sorted(n for n in set(names) if names.count(n) > 1) == []


def test_every_imported_distribution_is_declared() -> None:
    declared = {_name(r) for r in PYPROJECT["project"]["dependencies"]}
    extras = PYPROJECT["project"]["optional-dependencies"]
    for extra in ("embedded", "autogen", "langgraph"):  # the adapters import their framework's (streams.adapters)
        declared |= {_name(r) for r in extras[extra]}
    owners = packages_distributions()
    undeclared = {
        module: dists
        for module in _imported_modules()
        if not declared & (dists := {_name(d) for d in owners.get(module, [module])})
    }
    assert undeclared == {}
