"""Rollouts need no node the ledger did not reserve: every engine workload replaces copies one at a
time (maxSurge 0, maxUnavailable 1), whatever its shape. The Kubernetes default (maxSurge 25%,
rounded up to 1) would start a surge copy first and wait forever on a full pool. On a pool with
zeroDowntimeRollouts the ledger kept room for a surge pod, so Standalone engines there surge."""

from __future__ import annotations

import pytest

from modelplane.api import Fleet
from tests.builders import cluster, pool
from tests.compose.helpers import FLEET, H100, compose, deployment, engine, everything, find, member

NO_SURGE = {"maxSurge": 0, "maxUnavailable": 1}

CASES = [
    ("one copy of a standalone engine", deployment("one", engine("e", member()))),
    ("three copies of a standalone engine", deployment("three", engine("e", member(), copies=3))),
    ("a leader and worker gang", deployment("gang", engine("e", member("Leader"), member("Worker", nodes=1)))),
    ("two copies of a gang", deployment("gangs", engine("e", member("Leader"), member("Worker", nodes=1), copies=2))),
]


@pytest.mark.parametrize(("name", "model"), CASES, ids=[c[0] for c in CASES])
def test_every_engine_workload_rolls_without_a_surge_copy(name: str, model: object) -> None:
    objects = everything(compose(model))  # type: ignore[arg-type]
    workloads = [m for m in objects if m["kind"] in ("Deployment", "LeaderWorkerSet")]
    strategies = [m["spec"].get("strategy") or m["spec"].get("rolloutStrategy") for m in workloads]
    assert len(workloads) == 1
    assert strategies == [{"type": "RollingUpdate", "rollingUpdate": NO_SURGE}
                          if workloads[0]["kind"] == "Deployment"
                          else {"type": "RollingUpdate", "rollingUpdateConfiguration": NO_SURGE}]


def test_the_gang_keeps_its_group_restart_policy_beside_the_rollout() -> None:
    gang = find(everything(compose(CASES[2][1])), "LeaderWorkerSet")  # type: ignore[arg-type]
    assert gang["spec"]["leaderWorkerTemplate"]["restartPolicy"] == "RecreateGroupOnPodRestart"
    assert gang["spec"]["rolloutStrategy"]["rollingUpdateConfiguration"] == NO_SURGE


SURGE_FLEET = Fleet(clusters=(cluster("gpu-a", pool("h100", "h100", nodes=8, zero_downtime=True)),), classes=(H100,),
                    gateway=FLEET.gateway)


def test_a_standalone_engine_on_a_zero_downtime_pool_surges() -> None:
    """The ledger kept room for one more pod of its size, so the new pod starts before an old one stops."""
    objects = everything(compose(CASES[1][1], fleet=SURGE_FLEET))  # type: ignore[arg-type]
    assert find(objects, "Deployment")["spec"]["strategy"] == {"type": "RollingUpdate",
                                                               "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0}}


def test_a_gang_on_a_zero_downtime_pool_still_replaces_one_group_at_a_time() -> None:
    objects = everything(compose(CASES[2][1], fleet=SURGE_FLEET))  # type: ignore[arg-type]
    assert find(objects, "LeaderWorkerSet")["spec"]["rolloutStrategy"]["rollingUpdateConfiguration"] == NO_SURGE
