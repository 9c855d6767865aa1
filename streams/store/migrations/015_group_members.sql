-- Which worker holds which member of each consumer group (streams/worker/peers.py). A worker holds a session
-- advisory lock on hashtextextended(token, 0) on a connection of its own while it runs and deletes its row when it
-- stops in order. A row whose lock is free belongs to a worker that died without a word (SIGKILL, a crash): a live
-- worker of the same group then ends that member's group membership at once instead of waiting out its session.
CREATE TABLE IF NOT EXISTS group_members (
    token text PRIMARY KEY,
    group_id text NOT NULL,
    member_id text NOT NULL DEFAULT '',
    started_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX IF NOT EXISTS group_members_group_id ON group_members (group_id);
