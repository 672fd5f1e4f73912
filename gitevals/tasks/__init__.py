"""Task directories (Harbor / Terminal-Bench): ``<root>/tasks/<name>/``, whose own verifier
decides."""
