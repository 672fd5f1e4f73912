"""Reporters: each takes a finished result and returns text; nothing here decides."""
