from gitevals.cli import entry

entry()
