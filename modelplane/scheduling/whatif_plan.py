"""The plans before and after what-if edits: `before_and_after(fleet, workloads, edits, previous)`.

Contract: the result is exactly `(place(fleet, workloads, previous), place(*apply_edits(fleet,
workloads, edits), previous))`, byte for byte (tests/scheduling/test_whatif_plan.py checks it
against those two plans on hypothesis fleets and on the benchmark's generated fleets).

When every edit only raises pools (`pool C/P nodes=N` with N at least the pool's capacity: the
common "what if this pool had more nodes"), the edited fleet differs from the fleet only in those
pools' capacities, which only the ledger reads. The plan before is then recorded (`rerun.record`)
and the plan after is planned again from the first stage the raise can change (`rerun.rerun`, the
capacity search's incremental plan, exact by its own proof and tests), sharing every memo of the
first run (where engines can run, eligibility, CEL evaluations). Any other edit (lowering or
removing a pool, a new pool, a drain, a removed cluster, replicas) plans both from scratch.

Measured on the generated 100 x 1,000 standard fleet (the shared, loaded 2-core machine, CPU):
16 one-pool raises (+4 nodes) took 31.6 s for both placements against 53.4 s for the two plans
from scratch (59%), and 54% once the plan after takes over the reasons that cannot differ
(`_unchanged_reasons`); the whole `plan --format json --what-if 'pool cluster-0000/pool0
nodes=15'` process 3.6-4.1 s against 5.2-6.0 s before (interleaved, 3 runs each; the varied
shape's 3.8-4.8 s against 5.8-6.4 s). docs/performance.md has the figures.
"""

from __future__ import annotations

from collections.abc import Sequence

from modelplane.api import Fleet, Workloads
from modelplane.invariants import present
from modelplane.scheduling.explanation import detailed_clusters
from modelplane.scheduling.ledger import PoolKey
from modelplane.scheduling.placement import Placement, Replica
from modelplane.scheduling.rerun import Record, record, rerun
from modelplane.scheduling.run import Run
from modelplane.scheduling.scheduler import place, report
from modelplane.scheduling.whatif import Edit, SetPoolNodes, apply_edits


def before_and_after(fleet: Fleet, workloads: Workloads, edits: Sequence[Edit], previous: Placement | None
                     ) -> tuple[Placement, Placement, Fleet]:
    """The placements before and after `edits`, and the edited fleet; raises `EditError` for an edit
    that names what does not exist."""
    edited, edited_workloads = apply_edits(fleet, workloads, edits)
    raised = _raised(fleet, edited, edits)
    if raised is None:
        return place(fleet, workloads, previous), place(edited, edited_workloads, previous), edited
    run = Run(fleet, workloads)
    recorded = record(run, previous)
    before = report(run, _replicas(recorded))
    start = recorded.start(raised)
    # No check stopped at a raised pool (start None): no stage can change, so none is planned again;
    # the rerun only charges the recorded stages on a ledger with the raised capacities.
    again = present(rerun(recorded, raised, len(workloads.deployments) if start is None else start, None),
                    "a rerun without `stop` runs to the end")
    return before, report(again.run, _replicas(again), _unchanged_reasons(run, again.run, before)), edited


def _unchanged_reasons(run: Run, again: Run, before: Placement) -> dict[str, tuple[str, ...]]:
    """The reasons of the deployments short before that the plan after would word alike: a short
    deployment's reasons (`explanation.Briefing.brief`) read the ledger only on the pools of the
    clusters it is worked out on in detail (`explanation.detailed_clusters`: each verdict tries its
    options, which name pools of that cluster only); everything else they read
    (eligibility, what no pool can host whatever its load) does not depend on capacity. Where no
    pool of those clusters holds other pods or has another capacity after the raise, the reasons
    are the same, and are not worked out again (the two reports were about a quarter of both
    placements' time, cProfile; the module's figures say what taking them over saved)."""
    ledger, other = run.ledger, again.ledger
    changed = {present(run.snapshot.cluster(key[0]), "a pool's cluster is in the snapshot").position
               for key, *_ in run.snapshot.pool_list
               if ledger.capacity(key) != other.capacity(key) or ledger.holders(key) != other.holders(key)}
    return {deployment.key: status.reasons for deployment in run.workloads.deployments
            if (status := before.deployments[deployment.key]).short
            and changed.isdisjoint(detailed_clusters(run, deployment))}


def _raised(fleet: Fleet, edited: Fleet, edits: Sequence[Edit]) -> dict[PoolKey, int] | None:
    """The edited pools and their capacities when every edit only raises a pool's capacity, else None."""
    resized = [edit for edit in edits if isinstance(edit, SetPoolNodes)]
    if len(resized) < len(edits):
        return None
    raised: dict[PoolKey, int] = {}
    for edit in resized:
        was, now = (present(present(f.cluster(edit.cluster), "an edited cluster exists").pool(edit.pool),
                            "an edited pool exists").capacity for f in (fleet, edited))
        if now < was:
            return None
        raised[(edit.cluster, edit.pool)] = now
    return raised


def _replicas(found: Record) -> list[Replica]:
    return [replica for commits in (found.kept, *found.filled) for replica, _ in commits]
