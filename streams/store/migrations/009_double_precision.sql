-- Thresholds and scores as double precision (issue 18, point 14): a `real` column stores 0.6 as the nearest
-- float4, which reads back as 0.6000000238418579; configuration must show the value as entered.
-- Existing values go through numeric, which keeps the float4's shortest decimal form (0.6, not 0.60000002).
ALTER TABLE agent_evaluation_config
    ALTER COLUMN gate_adherence_threshold   TYPE double precision USING gate_adherence_threshold::numeric,
    ALTER COLUMN gate_consistency_threshold TYPE double precision USING gate_consistency_threshold::numeric,
    ALTER COLUMN gate_fluency_threshold     TYPE double precision USING gate_fluency_threshold::numeric,
    ALTER COLUMN gate_suitability_threshold TYPE double precision USING gate_suitability_threshold::numeric,
    ALTER COLUMN max_action_similarity      TYPE double precision USING max_action_similarity::numeric,
    ALTER COLUMN convergence_threshold      TYPE double precision USING convergence_threshold::numeric,
    ALTER COLUMN repetition_threshold       TYPE double precision USING repetition_threshold::numeric;

ALTER TABLE correction_logs
    ALTER COLUMN similarity_score TYPE double precision USING similarity_score::numeric,
    ALTER COLUMN total_score      TYPE double precision USING total_score::numeric;
