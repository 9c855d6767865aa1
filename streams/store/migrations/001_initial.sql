-- persona-drift schema, after seed doc 001. Run ids are free-form text chosen by orchestrators.

CREATE TABLE IF NOT EXISTS agents (
    id          text PRIMARY KEY,
    name        text,
    created_at  timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE IF NOT EXISTS runs (
    id          text PRIMARY KEY,
    created_at  timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE IF NOT EXISTS run_messages (
    id          uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    message_id  text NOT NULL UNIQUE,            -- the draft id for gate commits
    run_id      text REFERENCES runs(id) ON DELETE SET NULL,
    agent_id    text NOT NULL REFERENCES agents(id) ON DELETE CASCADE,
    agent_name  text,
    channel     text,
    recipient   text,
    kind        text NOT NULL DEFAULT 'action' CHECK (kind IN ('action', 'stimulus')),
    source      text,
    origin      text NOT NULL DEFAULT 'external',
    text        text NOT NULL,
    ts          timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX IF NOT EXISTS run_messages_agent_ts ON run_messages (agent_id, ts);
CREATE INDEX IF NOT EXISTS run_messages_run_ts ON run_messages (run_id, ts);
CREATE INDEX IF NOT EXISTS run_messages_channel_ts ON run_messages (channel, ts);

CREATE TABLE IF NOT EXISTS correction_logs (
    id               uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    draft_id         text NOT NULL,
    agent_id         text NOT NULL REFERENCES agents(id) ON DELETE CASCADE,
    run_id           text REFERENCES runs(id) ON DELETE SET NULL,
    original_text    text NOT NULL,
    corrected_text   text,
    dimension_scores jsonb,
    similarity_score real,
    total_score      real,
    attempt_number   integer NOT NULL,
    decision         text NOT NULL,
    outcome          text NOT NULL CHECK (outcome IN ('passed', 'corrected', 'passed_after_retry',
                                                      'forced_through', 'timeout_pass_through', 'rejected')),
    token_usage      jsonb,
    latency_ms       real,
    created_at       timestamptz NOT NULL DEFAULT now(),
    UNIQUE (draft_id, attempt_number)
);
CREATE INDEX IF NOT EXISTS correction_logs_agent_created ON correction_logs (agent_id, created_at);

CREATE TABLE IF NOT EXISTS agent_evaluation_config (
    id                              uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    agent_id                        text NOT NULL UNIQUE REFERENCES agents(id) ON DELETE CASCADE,
    gate_enabled                    boolean NOT NULL DEFAULT true,
    gate_adherence_enabled          boolean NOT NULL DEFAULT false,
    gate_consistency_enabled        boolean NOT NULL DEFAULT false,
    gate_fluency_enabled            boolean NOT NULL DEFAULT false,
    gate_suitability_enabled        boolean NOT NULL DEFAULT false,
    gate_adherence_threshold        real NOT NULL DEFAULT 7.0,
    gate_consistency_threshold      real NOT NULL DEFAULT 7.0,
    gate_fluency_threshold          real NOT NULL DEFAULT 7.0,
    gate_suitability_threshold      real NOT NULL DEFAULT 7.0,
    gate_similarity_enabled         boolean NOT NULL DEFAULT false,
    max_action_similarity           real NOT NULL DEFAULT 0.6,
    max_correction_attempts         integer NOT NULL DEFAULT 2,
    continue_on_failure             boolean NOT NULL DEFAULT true,
    minimum_required_qty_of_actions integer NOT NULL DEFAULT 0,
    anti_convergence_enabled        boolean NOT NULL DEFAULT false,
    convergence_threshold           real NOT NULL DEFAULT 0.6,
    variety_intervention_enabled    boolean NOT NULL DEFAULT false,
    variety_message_threshold       integer NOT NULL DEFAULT 7,
    repetition_suppression_enabled  boolean NOT NULL DEFAULT false,
    repetition_threshold            real NOT NULL DEFAULT 0.3,
    updated_at                      timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX IF NOT EXISTS agent_evaluation_config_updated ON agent_evaluation_config (updated_at);

CREATE TABLE IF NOT EXISTS evaluation_runs (
    id              uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    agent_id        text NOT NULL REFERENCES agents(id) ON DELETE CASCADE,
    status          text NOT NULL DEFAULT 'pending'
                    CHECK (status IN ('pending', 'running', 'completed', 'failed')),
    dimensions      text[] NOT NULL,
    window_start    timestamptz,
    window_end      timestamptz,
    sample_size     integer NOT NULL,
    overall_score   real,
    is_baseline     boolean NOT NULL DEFAULT false,
    token_usage     jsonb,
    error           text,
    request_id      text UNIQUE,
    created_at      timestamptz NOT NULL DEFAULT now(),
    completed_at    timestamptz
);
CREATE INDEX IF NOT EXISTS evaluation_runs_agent_created ON evaluation_runs (agent_id, created_at);

CREATE TABLE IF NOT EXISTS evaluation_scores (
    id                uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    evaluation_run_id uuid NOT NULL REFERENCES evaluation_runs(id) ON DELETE CASCADE,
    dimension         text NOT NULL,
    proposition_id    text NOT NULL,
    score             real NOT NULL,
    reasoning         text NOT NULL,
    context_snippet   text,
    created_at        timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX IF NOT EXISTS evaluation_scores_run_dimension ON evaluation_scores (evaluation_run_id, dimension);
