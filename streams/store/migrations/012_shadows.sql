-- Shadow gating (issue 30): a candidate proposition set, judge or configuration judged beside the live gate
-- on a sample of live drafts, after their live verdict was sent, and what it would have decided.

CREATE TABLE IF NOT EXISTS shadows (
    name          text             PRIMARY KEY,
    agents        text             NOT NULL,                 -- glob over agent ids, as `drift config set`
    propositions  text,                                      -- candidate propositions tree; NULL: the live one
    judge         text,                                      -- candidate judge spec; NULL: the live one
    settings      jsonb            NOT NULL DEFAULT '{}',    -- candidate configuration keys (key -> value)
    sample        double precision NOT NULL DEFAULT 0.2 CHECK (sample > 0 AND sample <= 1),
    budget_usd    double precision CHECK (budget_usd > 0),
    max_tokens    bigint           CHECK (max_tokens > 0),
    status        text             NOT NULL DEFAULT 'running'
                  CHECK (status IN ('running', 'budget_spent', 'stopped', 'promoted')),
    spent_tokens  bigint           NOT NULL DEFAULT 0,
    spent_usd     double precision NOT NULL DEFAULT 0,
    skipped       bigint           NOT NULL DEFAULT 0,       -- samples skipped because the shadow lane was full
    created_at    timestamptz      NOT NULL DEFAULT now(),
    created_by    text,
    stopped_at    timestamptz,
    promoted_at   timestamptz,
    promoted_by   text
);

-- One row per (shadow, live attempt): the candidate's verdict on the attempt the live gate judged, beside a copy
-- of the live verdict (so a report does not depend on how long correction_logs are kept). The live verdict's id
-- is (draft_id, attempt_number), unique in correction_logs too. The primary key makes a redelivered or
-- restarted shadow attempt land once.
CREATE TABLE IF NOT EXISTS shadow_verdicts (
    shadow               text             NOT NULL REFERENCES shadows(name) ON DELETE CASCADE,
    draft_id             text             NOT NULL,
    attempt_number       integer          NOT NULL,
    agent_id             text             NOT NULL,
    run_id               text,
    original_text        text             NOT NULL,
    dimension_scores     jsonb,                              -- same shape as correction_logs.dimension_scores
    similarity_score     double precision,
    total_score          double precision,
    decision             text             NOT NULL,          -- the candidate's: commit | retry | reject | skip
    live_decision        text             NOT NULL,
    live_dimension_scores jsonb,
    live_total_score     double precision,
    live_token_usage     jsonb,
    token_usage          jsonb,                              -- the candidate's judge tokens for this attempt
    latency_ms           double precision,
    created_at           timestamptz      NOT NULL DEFAULT now(),
    PRIMARY KEY (shadow, draft_id, attempt_number)
);
CREATE INDEX IF NOT EXISTS shadow_verdicts_created ON shadow_verdicts (shadow, created_at);
