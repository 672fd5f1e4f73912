"""Goldens: the golden set as a whole and as the regression suite.

Pure over values except where a module says otherwise: ``rows`` (JSON lines ->
rows), ``mapping`` (the bucket -> grader lint), ``filters`` (the drift suite's tiny
filter language), ``drift`` (the drift suite: schema, lint, deterministic samples),
``plan`` (a tree -> the items a run asks), ``execute`` (the one IO module: items
to the target, then to their grader), ``gate`` (baseline and gate, pure), ``stats``
(counts and the seed's floors), ``leak`` (training files checked for golden rows),
``flywheel`` (traces in, rows out) and ``doctor`` (the Phase 0 checklist). The
artifact's ``goldens`` part (types, slices, re-scoring) lives with the artifact in
``run/goldens.py``.
"""

#: The drift suite's file under the eval root (here, so lint can tell there is none
#: without importing the suite's modules).
SUITE_FILE = "drift-suite.yaml"
