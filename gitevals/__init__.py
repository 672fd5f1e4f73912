"""gitevals: evals for LLM agent harnesses, kept and checked in the harness's own git repo."""

__version__ = "0.1.0"
