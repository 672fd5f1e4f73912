"""The golden set as a whole: counts and the seed's floors (``stats``), training files
checked for golden rows (``leak``), and the Phase 0 checklist (``doctor``).

Pure functions over bytes and values; the ``goldens`` and ``doctor`` commands read
files through a ``Tree`` (goldens) or stream them (training files) and print.
"""
