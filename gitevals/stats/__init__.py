"""The statistics kernel: pure functions over counts, no IO; imports nothing else of gitevals."""
