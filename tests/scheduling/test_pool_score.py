"""Pool scoring: among the pools of a cluster that can host an engine, which one it takes.

The issue's rule: "prefer the smallest fitting hardware (fewest devices per node that satisfy the
request, then least device memory above what the selectors need), then the cheapest when classes are
priced, then the platform team's order"; one pool for the whole engine before a split (the Engines rule);
"a retained replica never moves to a better pool". Each table case lets one score part decide while
the later parts point the other way, and checks the pool `place()` chose and the lines `explain`
prints for the losing pools. The property recomputes each pool's score from the classes' declared
hardware and prices, independently of `engines.score`.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from modelplane.api import InferenceClass, ModelDeployment
from modelplane.scheduling import explain, place
from tests.builders import (
    API,
    cluster,
    deployment,
    fleet,
    gang,
    gpu,
    member,
    memory_at_least,
    pool,
    request,
    standalone,
    workloads,
)
from tests.scheduling.test_properties import SETTINGS


def hardware(name: str, devices: int, gib: int, price: str | None = None) -> InferenceClass:
    """A class of `devices` GPUs of `gib` GiB per node, priced per node hour in USD when `price` is given."""
    spec: dict[str, Any] = {"devices": [gpu(memory=f"{gib}Gi", count=devices)]}
    if price is not None:
        spec["pricing"] = {"perNodeHour": price}
    return InferenceClass.model_validate({"apiVersion": API, "kind": "InferenceClass", "metadata": {"name": name},
                                          "spec": spec})


ONE_GPU = standalone(request(memory_at_least("20Gi")))
BELOW_40GI = request('device.capacity["gpu.nvidia.com"].memory.compareTo(quantity("40Gi")) < 0')


@dataclass(frozen=True)
class Case:
    name: str
    classes: tuple[InferenceClass, ...]
    pools: tuple[dict[str, Any], ...]
    """The cluster's pools, in the platform team's order; each has room for two replicas unless the
    case is about room, so `explain`'s next replica makes the same choice."""
    engine: dict[str, Any]
    want: dict[str, str]
    """The pool of each member of replica 0."""
    lines: tuple[str, ...]
    """Lines `explain` prints for the engine's choice."""


CASES = [
    Case("fewer devices per node wins, though the bigger node is cheaper and listed first",
         (hardware("big", 8, 80, "10"), hardware("quad", 4, 80, "20")),
         (pool("big", cls="big"), pool("quad", cls="quad")), ONE_GPU, {"Standalone": "quad"},
         ("engine: chose quad (4 devices/node, 80.0GiB, 20.00 USD/h, pool #2)",
          "over big (8 devices/node, 80.0GiB, 10.00 USD/h, pool #1): fewer devices per node")),
    Case("less device memory wins on as many devices, though the larger GPUs are cheaper and listed first",
         (hardware("h200", 8, 141, "10"), hardware("h100", 8, 80, "20")),
         (pool("h200", cls="h200"), pool("h100", cls="h100")), ONE_GPU, {"Standalone": "h100"},
         ("engine: chose h100 (8 devices/node, 80.0GiB, 20.00 USD/h, pool #2)",
          "over h200 (8 devices/node, 141.0GiB, 10.00 USD/h, pool #1): less device memory")),
    # 80Gi against 81Gi: 1/81 = 1.2% less memory, for 20 - 10 = 10.00 USD/h more.
    Case("device memory under 2% apart still decides before price, and explain says what that costs",
         (hardware("h100-81", 8, 81, "10"), hardware("h100-80", 8, 80, "20")),
         (pool("h100-81", cls="h100-81"), pool("h100-80", cls="h100-80")), ONE_GPU, {"Standalone": "h100-80"},
         ("engine: chose h100-80 (8 devices/node, 80.0GiB, 20.00 USD/h, pool #2)",
          "over h100-81 (8 devices/node, 81.0GiB, 10.00 USD/h, pool #1): less device memory, by only 1.2%: device "
          "memory is compared before price, so it decided though the chosen pool costs 10.00 USD/h more")),
    # 80Gi against 82Gi: 2/82 = 2.4% less, no longer "the same hardware".
    Case("device memory 2% apart or more is simply less device memory, though dearer",
         (hardware("h100-82", 8, 82, "10"), hardware("h100-80", 8, 80, "20")),
         (pool("h100-82", cls="h100-82"), pool("h100-80", cls="h100-80")), ONE_GPU, {"Standalone": "h100-80"},
         ("engine: chose h100-80 (8 devices/node, 80.0GiB, 20.00 USD/h, pool #2)",
          "over h100-82 (8 devices/node, 82.0GiB, 10.00 USD/h, pool #1): less device memory")),
    Case("device memory under 2% apart on a cheaper pool is simply less device memory",
         (hardware("h100-81", 8, 81, "20"), hardware("h100-80", 8, 80, "10")),
         (pool("h100-81", cls="h100-81"), pool("h100-80", cls="h100-80")), ONE_GPU, {"Standalone": "h100-80"},
         ("engine: chose h100-80 (8 devices/node, 80.0GiB, 10.00 USD/h, pool #2)",
          "over h100-81 (8 devices/node, 81.0GiB, 20.00 USD/h, pool #1): less device memory")),
    Case("on the same hardware the cheaper class wins, though listed second",
         (hardware("dear", 8, 80, "40.96"), hardware("cheap", 8, 80, "12.5")),
         (pool("dear", cls="dear"), pool("cheap", cls="cheap")), ONE_GPU, {"Standalone": "cheap"},
         ("engine: chose cheap (8 devices/node, 80.0GiB, 12.50 USD/h, pool #2)",
          "over dear (8 devices/node, 80.0GiB, 40.96 USD/h, pool #1): cheaper")),
    Case("a priced class comes before an unpriced one, however dear",
         (hardware("unpriced", 8, 80), hardware("dear", 8, 80, "98.32")),
         (pool("unpriced", cls="unpriced"), pool("dear", cls="dear")), ONE_GPU, {"Standalone": "dear"},
         ("engine: chose dear (8 devices/node, 80.0GiB, 98.32 USD/h, pool #2)",
          "over unpriced (8 devices/node, 80.0GiB, unpriced, pool #1): priced before unpriced")),
    Case("on equal hardware and price the pool listed first wins, whatever its name",
         (hardware("h100", 8, 80, "20"),),
         (pool("z-first", cls="h100"), pool("a-second", cls="h100")), ONE_GPU, {"Standalone": "z-first"},
         ("engine: chose z-first (8 devices/node, 80.0GiB, 20.00 USD/h, pool #1)",
          "over a-second (8 devices/node, 80.0GiB, 20.00 USD/h, pool #2): earlier in the cluster's pool list")),
    # A gang keeps a node per pod: 2 nodes per replica. Each small pool has 1, so only the H200 pool
    # can host the whole engine; the split over both small pools scores better (5 devices, not 8).
    Case("one pool for the whole engine beats a better-scored split",
         (hardware("l4", 1, 24), hardware("quad", 4, 80), hardware("h200", 8, 141)),
         (pool("l4", cls="l4"), pool("quad", cls="quad"), pool("h200", cls="h200", nodes=4)),
         gang(request(memory_at_least("20Gi"))), {"Leader": "h200", "Worker": "h200"},
         ("engine: chose h200 (8 devices/node, 141.0GiB, unpriced, pool #3)",
          "over l4 (1 devices/node, 24.0GiB, unpriced, pool #1): no room",
          "over quad (4 devices/node, 80.0GiB, unpriced, pool #2): no room",
          "over l4 (Leader) + quad (Worker) (5 devices/node, 104.0GiB, unpriced, pool #1+2): "
          "one pool for the whole engine before a split")),
    # Only the L4 pool can hold the Leader (under 40Gi); the whole gang (3 pods) needs 3 of its 2 nodes.
    Case("the members split only when no single pool has room for the whole engine",
         (hardware("l4", 1, 24), hardware("quad", 4, 80)),
         (pool("l4", cls="l4", nodes=2), pool("quad", cls="quad", nodes=4)),
         {"name": "engine", "members": [member("Leader", BELOW_40GI),
                                        member("Worker", request(memory_at_least("20Gi")), nodes=2)]},
         {"Leader": "l4", "Worker": "quad"},
         ("engine: chose l4 (Leader) + quad (Worker) (5 devices/node, 104.0GiB, unpriced, pool #1+2)",
          "over l4 (1 devices/node, 24.0GiB, unpriced, pool #1): no room")),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_the_chosen_pool_and_why(case: Case) -> None:
    f = fleet(cluster("a", *case.pools), classes=case.classes)
    w = workloads(deployment("m", case.engine))
    replica, = place(f, w).replicas
    assert {role: m.pool for role, m in replica.engines["engine"].items()} == case.want
    lines = [line.strip() for line in explain(f, w, "ml/m").lines()]
    assert all(line in lines for line in case.lines), "\n".join(lines)


def test_a_retained_replica_does_not_move_to_a_better_pool_added_later() -> None:
    classes = (hardware("h200", 8, 141), hardware("quad", 4, 80))
    before = place(fleet(cluster("a", pool("h200", cls="h200")), classes=classes), workloads(deployment("m")))
    after = place(fleet(cluster("a", pool("quad", cls="quad"), pool("h200", cls="h200")), classes=classes),
                  workloads(deployment("m", replicas=2)), before)
    # Replica 0 stays on the larger hardware; only the new replica 1 takes the better pool.
    assert [(r.index, r.engines["engine"]["Standalone"].pool) for r in after.replicas] == [(0, "h200"), (1, "quad")]


# The property: random pools on one cluster, each of its own class drawn from a small menu (so that
# devices, memory and prices often tie and each later part has to decide), one random engine, one replica.
HARDWARE = ((1, 24), (4, 48), (4, 80), (8, 80))  # devices per node, GiB each
PRICES = (None, "2", "12.25")


@st.composite
def scored_fleets(draw: st.DrawFn) -> tuple[tuple[InferenceClass, ...], list[dict[str, Any]], ModelDeployment]:
    names = draw(st.permutations([f"p{i}" for i in range(draw(st.integers(3, 6)))]))
    classes = tuple(hardware(name, *draw(st.sampled_from(HARDWARE)), draw(st.sampled_from(PRICES))) for name in names)
    pools = [pool(name, cls=name, nodes=draw(st.sampled_from([0, 1, 2, 3, 3])),
                  sharing=draw(st.sampled_from([None, "Exclusive"]))) for name in names]
    req = request(memory_at_least(draw(st.sampled_from(["16Gi", "16Gi", "40Gi", "80Gi"]))),
                  count=draw(st.sampled_from([1, 2, 4, 8])))
    engine = draw(st.sampled_from([standalone(req), standalone(req, copies=2), gang(req), gang(req, workers=2)]))
    return classes, pools, deployment("m", engine)


def expected_score(klass: InferenceClass, order: int) -> tuple[int, Decimal, tuple[bool, Decimal], int]:
    """The issue's parts for the pool listed at `order`, from its class as declared: devices per node,
    memory per device, (unpriced, price), place in the pool list."""
    device, = klass.spec.devices
    price = klass.spec.pricing
    return (device.count, Decimal(device.capacity["memory"].value.removesuffix("Gi")),
            (price is None, price.amount if price else Decimal(0)), order)


@settings(SETTINGS, max_examples=300)  # cheap examples; a tie that only memory or price breaks is rare
@given(scored_fleets())
def test_the_chosen_pool_is_never_worse_than_another_that_fits_on_the_first_part_that_differs(drawn) -> None:
    classes, pools, dep = drawn
    w = workloads(dep)
    scores = {spec["name"]: expected_score(klass, order) for order, (spec, klass) in enumerate(zip(pools, classes))}
    # A pool fits when the engine alone is placed on a cluster of that pool alone.
    fitting = [spec["name"] for spec in pools
               if place(fleet(cluster("a", spec), classes=classes), w).deployments["ml/m"].scheduled == 1]
    placed = place(fleet(cluster("a", *pools), classes=classes), w).replicas
    chosen = {m.pool for r in placed for m in r.engines["engine"].values()}
    if len(chosen) != 1:  # unplaced or split: only when no single pool fits
        assert fitting == [], (chosen, fitting)
        return
    name, = chosen
    assert name in fitting
    assert all(scores[name] < scores[other] for other in fitting if other != name), (name, scores, fitting)
