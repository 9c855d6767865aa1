"""AgentV eval cases (seed 004 and the 4.x dialect): loader, evaluators, runner, summaries."""
