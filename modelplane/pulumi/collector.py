"""`collector_paused()`: pause Python's cyclic garbage collector for one call into the pure layers.

Only the entry points of a process touch the collector: `cli.run` and the Pulumi program
(`__main__.py`) turn it off for the whole process; the Placement provider's `check()`, the entry of
the dynamic-provider process, pauses it around loading and planning. The library functions
(`load`, `place`, `render`) leave it as they find it.

Why: a plan or a render allocates millions of short-lived objects, which reference counting frees;
each time they trigger a full collection, the collector also rescans every long-lived manifest
object (about a third of a 1,000-deployment plan, benchmarks/plan_fleet.py). The few cycles such a
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
