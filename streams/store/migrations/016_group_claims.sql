-- The partitions each worker of a consumer group holds, as it last claimed them (streams/worker/claims.py): a
-- worker that lost a partition at a rebalance releases it here once it has drained it, and the partition's new
-- owner waits for that before it reads it. A claim counts only while its worker holds the advisory lock of its
-- token (group_members): the claims of a worker that died are ignored, and swept with its registration.
CREATE TABLE IF NOT EXISTS group_claims (
    token text PRIMARY KEY,
    group_id text NOT NULL,
    partitions text[] NOT NULL DEFAULT '{}'
);
CREATE INDEX IF NOT EXISTS group_claims_group_id ON group_claims (group_id);
