-- Runs of the evaluation formats (MetaReason families, Plexus scorecards, AgentV eval files): one row per run
-- and one per item. Writes are idempotent upserts keyed by (run_id) and (run_id, item_id), so a resumed run
-- rewrites nothing twice.

CREATE TABLE IF NOT EXISTS format_runs (
    run_id      uuid PRIMARY KEY,
    format      text NOT NULL CHECK (format IN ('metareason', 'plexus', 'agentv')),
    source      text NOT NULL,
    target      text NOT NULL,
    judge       text NOT NULL,
    status      text NOT NULL CHECK (status IN ('running', 'completed', 'partial', 'failed')),
    started_at  timestamptz NOT NULL,
    finished_at timestamptz,
    summary     jsonb NOT NULL DEFAULT '{}'::jsonb
);
CREATE INDEX IF NOT EXISTS format_runs_format_started ON format_runs (format, started_at DESC);

CREATE TABLE IF NOT EXISTS format_results (
    run_id   uuid NOT NULL REFERENCES format_runs (run_id) ON DELETE CASCADE,
    item_id  text NOT NULL,
    score    double precision,
    verdict  text,
    error    text,
    result   jsonb NOT NULL,
    PRIMARY KEY (run_id, item_id)
);
