-- Shadow gating's promote (issue 30): an agent's own propositions tree and judge spec. NULL: the worker's
-- (DRIFT_PROPOSITIONS_DIR, DRIFT_JUDGE). Workers keep one built library and judge per distinct value.
ALTER TABLE agent_evaluation_config
    ADD COLUMN IF NOT EXISTS propositions text,
    ADD COLUMN IF NOT EXISTS judge        text;
