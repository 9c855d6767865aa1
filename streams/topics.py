"""Topic names and up-front creation (the embedded broker never auto-creates topics)."""

from __future__ import annotations

from dataclasses import dataclass

from engine.settings import Settings

#: Every topic of the protocol, without the prefix.
TOPIC_NAMES: tuple[str, ...] = (
    "drafts",
    "verdicts",
    "messages",
    "correction-logs",
    "agent-config",
    "dlq",
    "evaluation-requests",
    "evaluations",
    "steps",
    "directives",
)

#: Faust tables of the gate app (their changelog topics are created up front too).
TABLE_NAMES: tuple[str, ...] = ("recent-messages", "pending-attempts", "verdict-records", "message-counts")


@dataclass(frozen=True, slots=True)
class Topics:
    """Resolved topic names for one prefix."""

    prefix: str

    def __getattr__(self, name: str) -> str:
        wire = name.replace("_", "-")
        if wire not in TOPIC_NAMES:
            raise AttributeError(name)
        return f"{self.prefix}{wire}"

    def all(self) -> tuple[str, ...]:
        return tuple(f"{self.prefix}{n}" for n in TOPIC_NAMES)


def app_id(settings: Settings) -> str:
    """The consumer group / Faust app id: one per topic prefix so prefixes never share state."""
    slug = settings.topic_prefix.strip(".-_") or "default"
    return f"persona-drift-{slug}"


def changelog_topics(settings: Settings) -> tuple[str, ...]:
    base = app_id(settings)
    return tuple(f"{base}-{name}-changelog" for name in TABLE_NAMES)


def all_topics(settings: Settings) -> tuple[str, ...]:
    """Protocol topics, table changelogs and Faust's leader-election topic."""
    leader = f"{app_id(settings)}-__assignor-__leader"
    return (*Topics(settings.topic_prefix).all(), *changelog_topics(settings), leader)
