"""Runs: plan, targets, graders, the judge, the artifact model and pure scoring."""
