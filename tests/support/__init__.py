"""What the tests share: repository builders, artifact factories, fake servers, harness
texts and machine helpers (Ray, Chromium, users). Test modules import from here and from
``tests.conftest`` only, never from one another (``tests/test_test_imports.py``)."""
