-- Experiments (`drift experiment run`): one row per experiment, one per finished session (arm × session key),
-- one per metric value. A session is written in one transaction together with its evaluation runs and score
-- rows, keyed by (experiment, arm, session key): a resumed experiment skips finished sessions and never writes
-- a row twice. Environment metrics use the session's run id as their subject.

CREATE TABLE IF NOT EXISTS experiments (
    id          text PRIMARY KEY,
    scenario    text NOT NULL,
    paper_key   text,
    status      text NOT NULL CHECK (status IN ('running', 'completed', 'partial', 'failed')),
    settings    jsonb NOT NULL DEFAULT '{}'::jsonb,
    attempts    integer NOT NULL DEFAULT 1,
    created_at  timestamptz NOT NULL DEFAULT now(),
    finished_at timestamptz
);

CREATE TABLE IF NOT EXISTS experiment_sessions (
    experiment_id text NOT NULL REFERENCES experiments (id) ON DELETE CASCADE,
    arm           text NOT NULL CHECK (arm IN ('treatment', 'control')),
    session_key   text NOT NULL,
    run_id        text NOT NULL,
    grp           text NOT NULL,
    extracted     integer,
    error         text,
    llm_calls     integer NOT NULL DEFAULT 0,
    token_usage   jsonb NOT NULL DEFAULT '{}'::jsonb,
    cost_usd      double precision,
    wall_s        double precision NOT NULL DEFAULT 0,
    finished_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (experiment_id, arm, session_key)
);

CREATE TABLE IF NOT EXISTS experiment_scores (
    experiment_id     text NOT NULL,
    arm               text NOT NULL,
    session_key       text NOT NULL,
    metric            text NOT NULL,
    subject           text NOT NULL,
    cluster           text NOT NULL,
    value             double precision NOT NULL,
    evaluation_run_id uuid REFERENCES evaluation_runs (id) ON DELETE SET NULL,
    PRIMARY KEY (experiment_id, arm, session_key, metric, subject),
    FOREIGN KEY (experiment_id, arm, session_key)
        REFERENCES experiment_sessions (experiment_id, arm, session_key) ON DELETE CASCADE
);
CREATE INDEX IF NOT EXISTS experiment_scores_metric ON experiment_scores (experiment_id, metric);
