"""Rollouts need no node the ledger did not reserve: every engine workload replaces copies one at a
time (maxSurge 0, maxUnavailable 1), whatever its shape. The Kubernetes default (maxSurge 25%,
rounded up to 1) would start a surge copy first and wait forever on a full pool."""

from __future__ import annotations

import pytest

from tests.compose.helpers import compose, deployment, engine, everything, find, member

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
