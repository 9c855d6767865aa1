-- The drift monitor (issue 27): per-agent monitor keys, the detectors' state with the offsets it reflects
-- (written in one transaction, so a restart resumes exactly where the state stands), the alerts, and the
-- anchor set the live judge re-scores.
ALTER TABLE agent_evaluation_config
    ADD COLUMN IF NOT EXISTS monitor_enabled   boolean          NOT NULL DEFAULT true,
    ADD COLUMN IF NOT EXISTS monitor_alpha     double precision NOT NULL DEFAULT 0.01,
    ADD COLUMN IF NOT EXISTS monitor_min_shift double precision NOT NULL DEFAULT 1.0,
    ADD COLUMN IF NOT EXISTS monitor_reference text             NOT NULL DEFAULT 'baseline'
        CHECK (monitor_reference IN ('baseline', 'first-n'));

-- scope: the monitor's consumer group (one per topic prefix), so prefixes sharing a database never mix.
CREATE TABLE IF NOT EXISTS monitor_streams (
    scope      text        NOT NULL,
    agent_id   text        NOT NULL,
    dimension  text        NOT NULL,
    source     text        NOT NULL CHECK (source IN ('gate', 'evaluation', 'anchor')),
    state      jsonb       NOT NULL,
    updated_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (scope, agent_id, dimension, source)
);
CREATE INDEX IF NOT EXISTS monitor_streams_dimension ON monitor_streams (scope, dimension, source);

CREATE TABLE IF NOT EXISTS monitor_offsets (
    consumer_group text   NOT NULL,
    topic          text   NOT NULL,
    partition      integer NOT NULL,
    next_offset    bigint NOT NULL,
    PRIMARY KEY (consumer_group, topic, partition)
);

-- Records the monitor has applied (a draft's first attempt, an evaluation run), so a redelivered record is not
-- observed twice; rows older than a day are pruned (redeliveries come within minutes).
CREATE TABLE IF NOT EXISTS monitor_seen (
    record_key text        PRIMARY KEY,
    seen_at    timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX IF NOT EXISTS monitor_seen_at ON monitor_seen (seen_at);

CREATE TABLE IF NOT EXISTS alerts (
    id              text        PRIMARY KEY,
    scope           text        NOT NULL,
    agent_id        text        NOT NULL,
    dimension       text        NOT NULL,
    source          text        NOT NULL CHECK (source IN ('gate', 'evaluation', 'anchor')),
    cause           text        NOT NULL CHECK (cause IN ('agent', 'judge', 'unknown')),
    direction       text        NOT NULL CHECK (direction IN ('drop', 'rise')),
    reference       double precision NOT NULL,
    recent_mean     double precision,
    evidence        double precision NOT NULL,
    alpha           double precision NOT NULL,
    min_shift       double precision NOT NULL,
    observation     integer     NOT NULL,
    created_at      timestamptz NOT NULL DEFAULT now(),
    acknowledged_at timestamptz
);
CREATE INDEX IF NOT EXISTS alerts_dimension_created ON alerts (scope, dimension, created_at);
CREATE INDEX IF NOT EXISTS alerts_agent_created ON alerts (agent_id, created_at);

CREATE TABLE IF NOT EXISTS monitor_anchors (
    id        text        PRIMARY KEY,
    dimension text        NOT NULL,
    agent_id  text        NOT NULL,
    events    jsonb       NOT NULL,
    reference double precision,
    origin    text        NOT NULL CHECK (origin IN ('labels', 'committed')),
    scored    integer     NOT NULL DEFAULT 0,
    last_scored_at timestamptz
);
