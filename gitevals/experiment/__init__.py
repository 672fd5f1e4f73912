"""Experiments: several harness lanes under controlled conditions (``gitevals experiment``),
and observing one release from recorded conversations (``gitevals observe``)."""
