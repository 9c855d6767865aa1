"""The data bundled with the distribution (propositions, simulations, examples) as commands meet it: looked up by
name, and never written.

A wheel installs these folders inside site-packages and a source checkout keeps them in the repository; either
way no default of a command writes there. A command that writes (baselines, reports, scaffolds, populations)
calls :func:`writable_target` on its target first: a default that would land in the bundled data is refused
with the flag to pass instead, and so is any target in an installed package; in a source checkout a
maintainer may still name a bundled folder explicitly (``--baseline-dir propositions/baselines``).
"""

from __future__ import annotations

from pathlib import Path

from engine.errors import ConfigurationError
from engine.propositions.models import suggestion
from engine.settings import REPO_ROOT, bundled_example, bundled_propositions, bundled_simulations


def bundled_roots() -> tuple[Path, ...]:
    """The folders of the distribution's own data, resolved."""
    return tuple(p.resolve() for p in (bundled_propositions(), bundled_simulations(), bundled_example("x").parent))


def is_bundled(path: Path) -> bool:
    """True when ``path`` is, or lies inside, one of the distribution's data folders."""
    target = path.expanduser().resolve()
    return any(target == root or root in target.parents for root in bundled_roots())


def in_source_checkout(path: Path) -> bool:
    """True when ``path`` lies in the repository this code runs from (an editable install), where a maintainer
    regenerates the bundled files on purpose; False in an installed distribution (site-packages)."""
    return (REPO_ROOT / "pyproject.toml").is_file() and REPO_ROOT.resolve() in path.expanduser().resolve().parents


def writable_target(path: Path, what: str, instead: str, *, chosen: bool = True) -> Path:
    """``path`` when a command may write ``what`` there; a :class:`ConfigurationError` naming ``instead`` (the
    flag or command to use) when it lies in the bundled data and either was not ``chosen`` by the user (a
    default, such as ``<bundled propositions>/baselines``) or is the installed package's own copy."""
    if is_bundled(path) and (not chosen or not in_source_checkout(path)):
        raise ConfigurationError(
            f"{path} is part of persona-drift's bundled data, which commands never change: not writing {what} "
            f"there; {instead}"
        )
    return path


def unknown_bundled(kind: str, name: str, folder: Path) -> ConfigurationError:
    """The error for a bundled ``kind`` (scenario, profile) that does not exist, with the names that do."""
    names = sorted(p.stem for p in folder.glob("*.yaml"))
    hint = suggestion(name, names)
    return ConfigurationError(f"no such {kind} '{name}'{hint} (bundled: {', '.join(names)}; or give a file path)")
