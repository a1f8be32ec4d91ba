"""Workloads of a replica: Deployment or LeaderWorkerSet, pods, claims, pinning, labels, names.

Expected values come from the issue text (issue 4) and DESIGN section 5.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import pytest

from modelplane.compose.names import name
from tests.compose.helpers import compose, deployment, engine, find, member

ENV = [{"name": "HOST_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
       {"name": "PEER", "value": "$(MODELPLANE_LEADER_ADDRESS)"}]
# ENV as rendered: the fieldRef with the apiVersion the API server defaults (core/v1 ObjectFieldSelector:
# "Version of the schema the FieldPath is written in terms of, defaults to \"v1\"").
RENDERED_ENV = [{"name": "HOST_IP", "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "status.podIP"}}},
                ENV[1]]


def gang(workers: int = 1, copies: int = 1, leader_claims: bool = True, **fields: Any) -> dict:
    return engine("big", member("Leader", claims=leader_claims, **fields), member("Worker", nodes=workers, **fields),
                  copies=copies)


def objects(*engines: dict, **kwargs: Any) -> list[dict]:
    rendered = compose(deployment("m", *engines, **kwargs))
    return [m for ms in rendered.clusters.values() for m in ms]


def pods(workload: dict) -> list[dict]:
    """The pod templates of a Deployment, or the leader and worker templates of a LeaderWorkerSet."""
    if workload["kind"] == "Deployment":
        return [workload["spec"]["template"]]
    lwt = workload["spec"]["leaderWorkerTemplate"]
    return [lwt["leaderTemplate"], lwt["workerTemplate"]]


def engine_container(template: dict) -> dict:
    return next(c for c in template["spec"]["containers"] if c["name"] == "engine")


@dataclass
class Case:
    name: str
    engines: tuple[dict, ...]
    check: Callable[[list[dict]], Any]


def _lws(ms: list[dict]) -> dict:
    return find(ms, "LeaderWorkerSet")


CASES = [
    Case("a standalone engine is a Deployment with replicas = copies",
         (engine("small", copies=3),),
         lambda ms: find(ms, "Deployment")["spec"]["replicas"] == 3 and not [m for m in ms if m["kind"] == "LeaderWorkerSet"]),
    Case("a leader/worker engine is a LeaderWorkerSet with replicas = copies and size = 1 + worker.nodes",
         (gang(workers=3, copies=2),),
         lambda ms: (_lws(ms)["spec"]["replicas"], _lws(ms)["spec"]["leaderWorkerTemplate"]["size"]) == (2, 4)),
    Case("leader and worker templates come from the two members",
         (engine("big", member("Leader", image="leader:1"), member("Worker", nodes=1, image="worker:1")),),
         lambda ms: [engine_container(t)["image"] for t in pods(_lws(ms))] == ["leader:1", "worker:1"]),
    Case("a gang's pods get the leader address and their rank ahead of the user's env",
         (gang(env=ENV),),
         lambda ms: all(engine_container(t)["env"] == [
             {"name": "MODELPLANE_LEADER_ADDRESS", "value": "$(LWS_LEADER_ADDRESS)"},
             {"name": "MODELPLANE_RANK", "value": "$(LWS_WORKER_INDEX)"}, *RENDERED_ENV] for t in pods(_lws(ms)))),
    Case("a user variable named like an injected one replaces it",
         (gang(env=[{"name": "MODELPLANE_RANK", "value": "7"}]),),
         lambda ms: [e["name"] for e in engine_container(pods(_lws(ms))[0])["env"]]
         == ["MODELPLANE_LEADER_ADDRESS", "MODELPLANE_RANK"]
         and engine_container(pods(_lws(ms))[0])["env"][1] == {"name": "MODELPLANE_RANK", "value": "7"}),
    Case("a standalone pod gets no injected env and keeps image, command, args and env verbatim (but for the "
         "fieldRef's defaulted apiVersion)",
         (engine("small", member(image="img:2", command=["python", "-m", "srv"], args=["--x=1"], env=ENV[:1])),),
         lambda ms: {k: v for k, v in engine_container(pods(find(ms, "Deployment"))[0]).items()
                     if k in ("image", "command", "args", "env")}
         == {"image": "img:2", "command": ["python", "-m", "srv"], "args": ["--x=1"], "env": RENDERED_ENV[:1]}),
    Case("only claiming members get a ResourceClaimTemplate, and only their pods claim it",
         (gang(leader_claims=False),),
         lambda ms: [m["metadata"]["name"] for m in ms if m["kind"] == "ResourceClaimTemplate"] == ["m-gpu-a-0-big-worker"]
         and ["resourceClaims" in t["spec"] for t in pods(_lws(ms))] == [False, True]
         and "resources" not in engine_container(pods(_lws(ms))[0])),
    Case("a claim template carries the placement's requests with the user's CEL verbatim",
         (engine("small", member(count=2)),),
         lambda ms: find(ms, "ResourceClaimTemplate")["spec"]["spec"]["devices"]["requests"] == [
             {"name": "gpu", "exactly": {"deviceClassName": "gpu.nvidia.com", "allocationMode": "ExactCount",
                                         "count": 2, "selectors": [
                 {"cel": {"expression": 'device.capacity["gpu.nvidia.com"].memory.compareTo(quantity("40Gi")) >= 0'}}]}}]),
    Case("a claiming pod names its template and its engine container claims it",
         (engine("small"),),
         lambda ms: pods(find(ms, "Deployment"))[0]["spec"]["resourceClaims"]
         == [{"name": "devices", "resourceClaimTemplateName": "m-gpu-a-0-small-standalone"}]
         and engine_container(pods(find(ms, "Deployment"))[0])["resources"] == {"claims": [{"name": "devices"}]}),
    Case("every pod is pinned to its pool, tolerates the GPU taint and mounts a memory-backed /dev/shm",
         (gang(),),
         lambda ms: all(t["spec"]["nodeSelector"] == {"modelplane.ai/pool": "h100"}
                        and {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"} in t["spec"]["tolerations"]
                        and {"name": "dshm", "emptyDir": {"medium": "Memory"}} in t["spec"]["volumes"]
                        and {"name": "dshm", "mountPath": "/dev/shm"} in engine_container(t)["volumeMounts"]
                        for t in pods(_lws(ms)))),
    Case("the serving pod exposes port 8000 with a readiness probe on /health; workers expose nothing",
         (gang(),),
         lambda ms: [(engine_container(t).get("ports"), engine_container(t).get("readinessProbe", {}).get("httpGet"))
                     for t in pods(_lws(ms))]
         == [([{"name": "http", "containerPort": 8000, "protocol": "TCP"}], {"path": "/health", "port": 8000}), (None, None)]),
    Case("a --port in the user's args chooses the serving port, also for the Service",
         (engine("small", member(args=["--port", "9001"])),),
         lambda ms: engine_container(pods(find(ms, "Deployment"))[0])["ports"][0]["containerPort"] == 9001
         and find(ms, "Service")["spec"]["ports"][0]["port"] == 9001),
    Case("the Service selects only an engine's serving pods (LWS leaders, not workers)",
         (gang(),),
         lambda ms: find(ms, "Service")["spec"]["selector"]["modelplane.ai/serving"] == "true"
         and pods(_lws(ms))[0]["metadata"]["labels"].get("modelplane.ai/serving") == "true"
         and "modelplane.ai/serving" not in pods(_lws(ms))[1]["metadata"]["labels"]),
    Case("the replica's route maps only /<namespace>/<replica>/v1/ (the OpenAI API, issue 23) to its Service, "
         "rewritten to /v1/ with no request timeout",
         (engine("small"),),
         lambda ms: find(ms, "HTTPRoute")["spec"]["rules"] == [{
             "matches": [{"path": {"type": "PathPrefix", "value": "/ml/m-gpu-a-0/v1/"}}],
             "filters": [{"type": "URLRewrite", "urlRewrite": {"path": {"type": "ReplacePrefixMatch",
                                                                         "replacePrefixMatch": "/v1/"}}}],
             "backendRefs": [{"group": "", "kind": "Service", "name": "m-gpu-a-0-small", "port": 8000, "weight": 1}],
             "timeouts": {"request": "0s"}}]),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_workload(case: Case) -> None:
    assert case.check(objects(*case.engines))


def test_deployment_tolerations_reach_every_pod() -> None:
    toleration = {"key": "dedicated", "operator": "Equal", "value": "frontier", "effect": "NoSchedule"}
    ms = objects(engine("small"), tolerations=[toleration])
    assert toleration in pods(find(ms, "Deployment"))[0]["spec"]["tolerations"]


def test_member_labels_reach_the_pods() -> None:
    ms = objects(engine("small", member(labels={"team.example.com/app": "x"})))
    labels = pods(find(ms, "Deployment"))[0]["metadata"]["labels"]
    assert labels["team.example.com/app"] == "x"
    assert (labels["modelplane.ai/deployment"], labels["modelplane.ai/cluster"], labels["modelplane.ai/replica-index"]) \
        == ("m", "gpu-a", "0")


NAMES = [
    ("short parts are joined readably", ("qwen3-8b", "gke-us-central", "0"), 63, "qwen3-8b-gke-us-central-0"),
    ("a long name is cut to the limit and ends in a hash of the whole", ("a" * 40, "b" * 30, "0"), 63,
     "a" * 40 + "-" + "b" * 13 + "-"),
    ("a tighter limit (a LeaderWorkerSet's) cuts earlier", ("x" * 50,), 45, "x" * 36 + "-"),
]


@pytest.mark.parametrize(("parts", "limit", "prefix"), [c[1:] for c in NAMES], ids=[c[0] for c in NAMES])
def test_names(parts: tuple[str, ...], limit: int, prefix: str) -> None:
    got = name(*parts, limit=limit)
    assert got == prefix if len(prefix) < limit - 8 and not prefix.endswith("-") else got.startswith(prefix)
    assert len(got) <= limit
    assert got == name(*parts, limit=limit)


def test_long_deployment_names_stay_within_63_characters_and_distinct() -> None:
    first = compose(deployment("a" * 60 + "x"), deployment("a" * 60 + "y"))
    names = [m["metadata"]["name"] for ms in first.clusters.values() for m in ms if m["kind"] == "Deployment"]
    assert len(names) == 2 and len(set(names)) == 2 and all(len(n) <= 63 for n in names)


@pytest.mark.parametrize("engines, workload_kind", [((engine("small"),), "Deployment"), ((gang(),), "LeaderWorkerSet")])
def test_no_service_of_ours_is_named_as_a_leaderworkerset(engines: tuple[dict, ...], workload_kind: str) -> None:
    """The LeaderWorkerSet controller owns a headless Service named as the set (sigs.k8s.io/lws v0.9.0
    `reconcileHeadlessServices`, selector `leaderworkerset.sigs.k8s.io/name`) and skips making it when a
    Service of that name exists; the route's Service beside a set is `<set>-http`, a Deployment's keeps
    the Deployment's name."""
    ms = objects(*engines)
    workload = find(ms, workload_kind)["metadata"]["name"]
    service = find(ms, "Service")["metadata"]["name"]
    route = find(ms, "HTTPRoute")
    assert service == (f"{workload}-http" if workload_kind == "LeaderWorkerSet" else workload)
    assert [ref["name"] for rule in route["spec"]["rules"] for ref in rule["backendRefs"]] == [service]
