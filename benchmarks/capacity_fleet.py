"""Benchmark: `modelplane capacity` (capacity suggestions) on the generated fleet of plan_fleet.py.

Generates the same fleet as `benchmarks/plan_fleet.py` (same flags, same seed, same fleet), plans
it once to count the short deployments, then times `suggest()` (what `modelplane capacity`
computes) and prints wall and CPU time (CPU is the figure to read on a shared machine), the
process's peak RSS, and how many suggestions and unplaceable deployments it found; progress goes to
stderr. With --check it then applies every suggestion with `apply_edits` and plans again, asserting
that it places every deployment it names and that no deployment loses a replica (what the property
test checks on small fleets). With --state the search keeps the base plan in place, as
`modelplane capacity --state` does with the JSON `plan` printed (every placed replica stays where
it is), and --check plans each suggestion with that placement too.

    python benchmarks/capacity_fleet.py [--clusters 100] [--deployments 1000] [--load 0.8] [--seed 7]
                                        [--shape standard|varied] [--state] [--check]

Targets (issue 26), on 2 cores: `--clusters 12 --deployments 160 --load 1.15` in <= 5 s and
<= 300 MB; `--clusters 100 --deployments 1000 --load 1.1` in <= 30 s and <= 1 GB.
"""

from __future__ import annotations

import argparse
import resource
import sys
import time

from plan_fleet import POOLS, SHAPES

from modelplane.api import load_sources
from modelplane.scheduling import place
from modelplane.scheduling.capacity import suggest
from modelplane.scheduling.whatif import apply_edits


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--clusters", type=int, default=100)
    parser.add_argument("--deployments", type=int, default=1000)
    parser.add_argument("--load", type=float, default=0.8, help="demand in nodes as a share of the fleet's capacity")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--shape", choices=sorted(SHAPES), default="standard", help="the fleet generator (plan_fleet.py)")
    parser.add_argument("--state", action="store_true", help="search with the base plan as the previous placement")
    parser.add_argument("--check", action="store_true", help="plan every suggestion again and check what it claims")
    args = parser.parse_args()
    manifests = load_sources([("fleet.yaml", SHAPES[args.shape](args.clusters, args.deployments, args.load,
                                                                        args.seed))])
    fleet, workloads = manifests.fleet, manifests.workloads
    base = place(fleet, workloads)
    short = sum(1 for status in base.deployments.values() if status.short)
    previous = base if args.state else None

    wall, cpu = time.perf_counter(), time.process_time()
    found = suggest(fleet, workloads, previous, progress=lambda done, total: print(
        f"{done}/{total} short deployments, {time.process_time() - cpu:.1f} s CPU", file=sys.stderr, flush=True))
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    print(f"fleet:        {len(fleet.clusters)} clusters x {POOLS} pools, {len(fleet.classes)} classes, "
          f"{len(workloads.deployments)} deployments ({short} short), load {args.load:.0%}, seed {args.seed}"
          f"{', the base plan kept in place' if args.state else ''}")
    print(f"suggestions:  {len(found.suggestions)} ({len({s.deployments[-1] for s in found.suggestions})} "
          f"deployments placed), {len(found.unplaceable)} unplaceable")
    print(f"capacity:     {wall:.2f} s wall, {cpu:.2f} s CPU (suggest(), what `modelplane capacity` computes)")
    print(f"peak RSS:     {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB (whole process)")
    if args.check:
        for suggestion in found.suggestions:
            after = place(*apply_edits(fleet, workloads, suggestion.edits), previous)
            assert not any(after.deployments[key].short for key in suggestion.deployments), suggestion
            assert all(after.deployments[key].scheduled >= status.scheduled
                       for key, status in base.deployments.items()), suggestion
        print("checked:      every suggestion places what it names and takes no replica from anyone")


if __name__ == "__main__":
    main()
