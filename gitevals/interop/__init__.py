"""Interop with the tools around gitevals: runs imported from, and exported to, them."""
