"""Population profiles: what population the factory describes to the model (``simulations/profiles``)."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from engine.bundled import unknown_bundled
from engine.errors import FileIssue, PropositionFileError
from engine.formats.registry import FileKind, top_keys
from engine.propositions.issues import validate_document
from engine.propositions.yamlsource import read_yaml
from engine.settings import bundled_simulations

BUNDLED_PROFILES = bundled_simulations() / "profiles"


class Profile(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str = Field(min_length=1)
    description: str = Field(min_length=1, description="The population, in plain words")
    requirements: str = Field("", description="What the sampling dimensions must cover")


def load_profile(name_or_path: str) -> Profile:
    path = Path(name_or_path).expanduser()
    if not path.suffix and not path.exists():
        path = BUNDLED_PROFILES / f"{name_or_path}.yaml"
        if not path.is_file():
            raise unknown_bundled("profile", name_or_path, BUNDLED_PROFILES)
    profile, issues = validate_document(read_yaml(path), Profile, "profile file")
    if profile is None or issues:
        raise PropositionFileError(issues)
    return profile


def _validate(path: Path) -> list[FileIssue]:
    return validate_document(read_yaml(path), Profile, "profile file")[1]


KIND = FileKind(
    "population-profile",
    "a population profile for drift population generate",
    lambda d: {"name", "description"} <= top_keys(d) and "id" not in top_keys(d),
    _validate,
)
