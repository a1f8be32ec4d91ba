"""`handoff`: make-before-break across cluster stacks, derived by hand from the rule in its docstring."""

from __future__ import annotations

import pytest

from modelplane.scheduling import DeploymentStatus, Placement, Replica
from modelplane.scheduling.handoff import handoff


def replica(slot: str) -> Replica:
    """`deployment@cluster#index`, e.g. `ml/a@east#0`."""
    deployment, _, rest = slot.partition("@")
    cluster, _, index = rest.partition("#")
    return Replica(deployment=deployment, cluster=cluster, index=int(index), engines={})


def placement(*slots: str, deployments: tuple[str, ...] = ("ml/a", "ml/b")) -> Placement:
    return Placement(replicas=tuple(map(replica, slots)),
                     deployments={d: DeploymentStatus(desired=1, scheduled=1) for d in deployments})


def slots(replicas: tuple[Replica, ...]) -> list[str]:
    return [f"{r.deployment}@{r.cluster}#{r.index}" for r in replicas]


CLUSTERS = ("east", "west")

CASES = [
    # (what, placed now, applied per cluster stack (None: not reported), running east, running west)
    ("nothing applied yet: each runs its own", ["ml/a@east#0", "ml/b@west#0"], {"east": None, "west": None},
     ["ml/a@east#0"], ["ml/b@west#0"]),
    ("moved east->west, west has not applied: east keeps it", ["ml/a@west#0"],
     {"east": ["ml/a@east#0"], "west": []}, ["ml/a@east#0"], ["ml/a@west#0"]),
    ("moved, west not enrolled: east keeps it", ["ml/a@west#0"], {"east": ["ml/a@east#0"]},
     ["ml/a@east#0"], ["ml/a@west#0"]),
    ("moved, west applied it: east drops it", ["ml/a@west#0"],
     {"east": ["ml/a@east#0"], "west": ["ml/a@west#0"]}, [], ["ml/a@west#0"]),
    ("scaled down: dropped at once", ["ml/a@east#0"], {"east": ["ml/a@east#0", "ml/a@east#1"], "west": []},
     ["ml/a@east#0"], []),
    ("deployment deleted: dropped at once", ["ml/b@west#0"], {"east": ["ml/c@east#0"], "west": ["ml/b@west#0"]},
     [], ["ml/b@west#0"]),
    ("another deployment pending does not hold this one", ["ml/a@west#0", "ml/b@west#0"],
     {"east": ["ml/a@east#0"], "west": ["ml/a@west#0"]}, [], ["ml/a@west#0", "ml/b@west#0"]),
]


@pytest.mark.parametrize(("what", "placed", "applied", "east", "west"), CASES, ids=[c[0] for c in CASES])
def test_running(what: str, placed: list[str], applied: dict[str, list[str] | None], east: list[str],
                 west: list[str]) -> None:
    reported = {cluster: None if value is None else [replica(s) for s in value] for cluster, value in applied.items()}
    found = handoff(placement(*placed), CLUSTERS, reported)
    assert {c: slots(r) for c, r in found.running.items()} == {"east": east, "west": west}
    assert found.stranded == {}


def test_draining_is_marked_and_routed() -> None:
    now = placement("ml/a@west#0")
    found = handoff(now, CLUSTERS, {"east": [replica("ml/a@east#0")], "west": []})
    assert {c: slots(r) for c, r in found.draining.items()} == {"east": ["ml/a@east#0"]}
    assert sorted(slots(found.placement(now).replicas)) == ["ml/a@east#0", "ml/a@west#0"]


def test_a_removed_cluster_still_running_replicas_is_stranded() -> None:
    found = handoff(placement("ml/a@west#0"), ("west",), {"east": [replica("ml/a@east#0")], "west": []})
    assert {c: slots(r) for c, r in found.stranded.items()} == {"east": ["ml/a@east#0"]}
    assert "east" not in found.running


def test_a_removed_cluster_whose_stack_is_empty_is_not_stranded() -> None:
    assert handoff(placement("ml/a@west#0"), ("west",), {"east": [], "west": []}).stranded == {}
