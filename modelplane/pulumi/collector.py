"""`collector_paused()`: pause Python's cyclic garbage collector for one pure computation.

A plan or a render allocates millions of short-lived objects, which reference counting frees; each
time they trigger a full collection, the collector also rescans every long-lived manifest object
(about a third of a 1,000-deployment plan, benchmarks/plan_fleet.py). The few cycles such a
computation makes are collected once the collector resumes. The collector's previous state is
restored, so a caller that had disabled it keeps it disabled.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def collector_paused() -> Iterator[None]:
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
