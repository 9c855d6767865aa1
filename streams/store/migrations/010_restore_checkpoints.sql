-- Bounded table restores (issue 22, point 3): every worker records, every DRIFT_RESTORE_CHECKPOINT_S, the end
-- offset of each changelog partition it owns. A restore starts from the newest checkpoint older than
-- DRIFT_RESTORE_WINDOW_S instead of the beginning of a changelog the embedded broker never compacts
-- (streams/runtime/restore.py). Rows older than a few windows are pruned by the workers.
CREATE TABLE IF NOT EXISTS changelog_checkpoints (
    topic       text NOT NULL,
    partition   integer NOT NULL,
    end_offset  bigint NOT NULL,
    taken_at    timestamptz NOT NULL,
    PRIMARY KEY (topic, partition, taken_at)
);

-- The agents' recent actions, newest first (the recent-messages window rebuilt from the record).
CREATE INDEX IF NOT EXISTS run_messages_actions_agent_ts ON run_messages (agent_id, ts DESC) WHERE kind = 'action';
