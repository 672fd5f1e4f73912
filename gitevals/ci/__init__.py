"""The steps of gitevals' CI integrations (``action.yml``, ``ci/gitlab/gitevals.gitlab-ci.yml``),
as ``python -m gitevals.ci STEP``: small, testable, and the same on both platforms.

- ``setup-sandbox``: bubblewrap installed, and user namespaces allowed (AppArmor's
  restriction on Ubuntu 24.04 lifted with sudo, or one line saying what to do);
- ``base-run REV``: ``reuse`` when REV already has a run (from the notes fetched), else
  ``run``;
- ``summary FILE``: the diff's markdown appended to ``$GITHUB_STEP_SUMMARY``;
- ``comment FILE``: one sticky pull/merge request comment, created or updated.
"""
