"""Test-wide settings.

Property-based tests run derandomized by default, so `make test` (and CI) checks the same examples
every time and a failure reproduces; `HYPOTHESIS_PROFILE=explore make test` draws fresh random
examples each run to hunt for new counterexamples.
"""

import os

from hypothesis import settings

settings.register_profile("repeatable", derandomize=True, deadline=None)
settings.register_profile("explore", derandomize=False, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "repeatable"))
