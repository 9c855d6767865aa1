-- Two gate outcomes (issue 10): 'skipped' (the agent chose silence: nothing committed) and 'not_gated_yet'
-- (fewer committed actions than minimum_required_qty_of_actions). The inline CHECK of 001 has the default
-- name correction_logs_outcome_check.

ALTER TABLE correction_logs DROP CONSTRAINT IF EXISTS correction_logs_outcome_check;
ALTER TABLE correction_logs ADD CONSTRAINT correction_logs_outcome_check
    CHECK (outcome IN ('passed', 'corrected', 'passed_after_retry', 'forced_through', 'timeout_pass_through',
                       'rejected', 'skipped', 'not_gated_yet'));
