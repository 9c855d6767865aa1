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
    "alerts",
    "shadows",
    "shadow-verdicts",
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


def changelog_table(topic: str) -> str | None:
    """The table of :data:`TABLE_NAMES` whose changelog ``topic`` is (under any app id); None for other topics."""
    return next((name for name in TABLE_NAMES if topic.endswith(f"-{name}-changelog")), None)


#: Windowed tables: Faust drops their windows after ``expires``; the changelog may drop them too.
WINDOWED_TABLES: tuple[str, ...] = ("message-counts",)


def topic_configs(settings: Settings) -> dict[str, dict[str, str]]:
    """Topic-level configuration of the topics that need one, by full name: every table changelog is
    compacted (``cleanup.policy=compact``), so on Kafka a restore reads the live keys, not every write ever made;
    the windowed count table's changelog also deletes what is older than its windows' expiry (twice the
    evaluation window). The embedded broker accepts these settings but does not compact: see
    :mod:`streams.runtime.restore` for how a restore stays bounded there."""
    base = app_id(settings)
    configs = {f"{base}-{name}-changelog": {"cleanup.policy": "compact"} for name in TABLE_NAMES}
    configs[f"{settings.topic_prefix}shadows"] = {"cleanup.policy": "compact"}  # a shadow's latest state per name
    retention_ms = str(int(settings.eval_window_s * 2 * 1000))
    for name in WINDOWED_TABLES:
        configs[f"{base}-{name}-changelog"] = {"cleanup.policy": "compact,delete", "retention.ms": retention_ms}
    return configs


def all_topics(settings: Settings) -> tuple[str, ...]:
    """Protocol topics, table changelogs and Faust's leader-election topic."""
    leader = f"{app_id(settings)}-__assignor-__leader"
    return (*Topics(settings.topic_prefix).all(), *changelog_topics(settings), leader)
