"""The statistics kernel: pure functions of numbers, no IO.

Nothing here imports from the rest of gitevals (``tests/stats/test_stats_kernel.py`` checks
it), so each procedure is tested on plain numbers against scipy/statsmodels and exact
enumeration, and every command (``diff``, ``gate``, ``run --against``, ``experiment``,
``plan``) calls the same function. ``multiplicity`` adjusts a family of p values
(Benjamini-Hochberg, Benjamini-Yekutieli, Holm); ``paired`` is the suite-level paired
comparison with a cluster-robust interval; ``power`` the minimum detectable effects;
``equivalence`` the two one-sided tests that can say "no drop larger than X";
``judge_correction`` the Rogan-Gladen rates corrected for a calibrated judge;
``sequential`` the group-sequential design of ``run --against``.
"""
