"""Packaging: the wheel carries the bundled propositions and the demo input, so an installed (not editable)
``drift`` runs ``propositions show`` and ``demo`` without the repository."""

from __future__ import annotations

import os
import shutil
import site
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from engine.settings import (
    EXAMPLES_PACKAGE,
    PROPOSITIONS_PACKAGE,
    REPO_ROOT,
    SIMULATIONS_PACKAGE,
    bundled_propositions,
    bundled_simulations,
)

PYPROJECT = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text(encoding="utf-8"))
# hidden entries (.git, .venv, caches, a stack's data directory a developer started in the checkout) hold no source
_NOT_SOURCE = shutil.ignore_patterns(".*", "build", "dist", "*.egg-info", "__pycache__", "tests",
                                     "persona-drift-*-data")  # fmt: skip


def test_the_package_list_covers_every_source_package() -> None:
    listed = set(PYPROJECT["tool"]["setuptools"]["packages"])
    found = {
        ".".join(init.parent.relative_to(REPO_ROOT).parts)
        for top in ("engine", "streams")
        for init in (REPO_ROOT / top).rglob("__init__.py")
    }
    assert listed == found | {PROPOSITIONS_PACKAGE, EXAMPLES_PACKAGE, SIMULATIONS_PACKAGE}
    assert PYPROJECT["tool"]["setuptools"]["package-dir"] == {
        PROPOSITIONS_PACKAGE: "propositions", EXAMPLES_PACKAGE: "ops/examples", SIMULATIONS_PACKAGE: "simulations",
    }  # fmt: skip


def test_the_bundled_directory_resolves_through_the_installed_package() -> None:
    assert bundled_propositions() == REPO_ROOT / "propositions"  # the editable install maps it here
    assert bundled_simulations() == REPO_ROOT / "simulations"


def _run(args: list[str | Path], cwd: Path, timeout: float) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in {"PYTHONPATH", "DRIFT_PROPOSITIONS_DIR"}}
    return subprocess.run([str(a) for a in args], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout,
                          check=False)  # fmt: skip


@pytest.mark.e2e
def test_a_wheel_install_runs_propositions_show_and_the_demo(tmp_path: Path) -> None:
    """``pip install .`` (not editable) into a throwaway venv whose only other content is a path to this
    environment's third-party packages; every command runs outside the repository."""
    source, venv = tmp_path / "source", tmp_path / "venv"
    shutil.copytree(REPO_ROOT, source, ignore=_NOT_SOURCE)  # a clean tree: no build artefacts in the checkout
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    installed = _run([sys.executable, "-m", "pip", "--python", python, "install", "--no-deps", "--quiet", source],
                     tmp_path, 120)  # fmt: skip
    assert installed.returncode == 0, installed.stderr
    (target,) = (venv / "lib").glob("python3*/site-packages")
    # third-party dependencies from this environment; its .pth files (the editable install) are not processed
    (target / "deps.pth").write_text("\n".join(site.getsitepackages()) + "\n", encoding="utf-8")
    drift = venv / "bin" / "drift"

    shown = _run([drift, "propositions", "show", "--dimension", "adherence", "--agent", "michael", "--json"],
                 tmp_path, 60)  # fmt: skip
    assert shown.returncode == 0, shown.stderr
    assert '"adherence-matches-persona"' in shown.stdout and '"michael-' in shown.stdout
    assert str(target / PROPOSITIONS_PACKAGE) in shown.stdout  # sources: the installed package data
    assert str(REPO_ROOT / "propositions") not in shown.stdout

    demo = _run([drift, "demo", "--judge", "offline"], tmp_path, 240)
    assert demo.returncode == 0, demo.stdout[-2000:] + demo.stderr[-2000:]
    assert "persona-drift demo" in demo.stdout and "office_conversation.jsonl" in demo.stdout
    assert "summary" in demo.stdout

    scenarios = target / SIMULATIONS_PACKAGE / "scenarios"
    validated = _run([drift, "validate", scenarios, target / SIMULATIONS_PACKAGE / "populations"], tmp_path, 60)
    assert validated.returncode == 0, validated.stderr
    assert validated.stdout.count("ok  scenario") == 4  # the four Table 1 scenarios ship with the wheel
    static = target / "streams" / "view" / "static"
    assert {p.name for p in static.iterdir()} >= {"index.html", "app.js", "style.css"}
