"""The exception tree. Every error persona-drift raises on purpose derives from :class:`DriftError`.

DriftError
├── ConfigurationError        bad settings, flags or files a user controls (CLI exit 2)
│   └── PropositionFileError  one or more ``FILE:LINE: field.path: message`` issues
├── JudgeError                a judge could not produce a valid answer
│   ├── JudgeTimeout          the per-call deadline passed
│   ├── JudgeOutputError      the answer was malformed or out of range after the repair retry
│   └── CassetteMiss          a replay judge has no recording for a fingerprint
├── PayloadError              a topic payload could not be decoded or validated
└── ServiceError              the broker, database or embedded stack failed
    └── ReplyTimeout          no verdict / directives record arrived in time (client SDK)
"""

from __future__ import annotations

from dataclasses import dataclass


class DriftError(Exception):
    """Root of every error persona-drift raises deliberately."""


class ConfigurationError(DriftError):
    """A user-controlled input (flag, environment variable, file) is wrong."""


@dataclass(frozen=True, slots=True)
class FileIssue:
    """One problem in a user file, located by file, line and field path."""

    file: str
    line: int
    path: str
    message: str

    def __str__(self) -> str:
        where = f"{self.file}:{self.line}" if self.line > 0 else self.file  # line 0: the file as a whole
        return f"{where}: {self.path}: {self.message}" if self.path else f"{where}: {self.message}"


class PropositionFileError(ConfigurationError):
    """One or more problems in proposition, persona or intervention YAML files."""

    def __init__(self, issues: list[FileIssue]) -> None:
        self.issues = tuple(issues)
        super().__init__("\n".join(str(issue) for issue in self.issues))


class JudgeError(DriftError):
    """A judge failed to produce an answer."""


class JudgeTimeout(JudgeError):
    """A judge call did not finish before its deadline."""


class JudgeOutputError(JudgeError):
    """A judge answered, but not in the required structure or range."""


class CassetteMiss(JudgeError):
    """A replay judge has no recorded answer for a request fingerprint."""

    def __init__(self, fingerprint: str, cassette: str) -> None:
        self.fingerprint = fingerprint
        super().__init__(f"no recording for fingerprint {fingerprint} in cassette {cassette}")


class PayloadError(DriftError):
    """A topic payload could not be decoded or failed validation."""


class ServiceError(DriftError):
    """The broker, the database or the embedded stack failed."""


class ReplyTimeout(ServiceError):
    """The gate did not answer (verdict or directives) within the client's timeout."""
