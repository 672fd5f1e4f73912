"""Task directories (Harbor / Terminal-Bench): ``<root>/tasks/<name>/``, whose own verifier
decides."""


def tasks_dir(root: str) -> str:
    """The tree path of the directory that holds task directories (here, not in ``load``:
    the commit hook asks it without loading the task model)."""
    return f"{root}/tasks" if root else "tasks"
