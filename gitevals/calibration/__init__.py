"""Judge calibration: labelled items, their split, TPR/TNR, the record, and the status.

``labels`` reads a labels file, ``metrics`` splits items and counts (pure), ``record``
builds and reads ``<root>/calibration/<file>.<function>.json``, ``status`` decides
whether a grader that asks the judge is calibrated or advisory (pure), and ``tree``
reads what ``status`` needs from a ``Tree`` for lint and run.
"""
