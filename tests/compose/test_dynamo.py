"""`InferenceCluster.spec.stack: Dynamo`: gangs as Grove PodCliqueSets, pods scheduled by KAI, ModelExpress.

Expected shapes come from the issue (one scaling group of a leader and a worker clique, worker
replicas = worker.nodes, scaling group replicas = copies, spec.replicas 1, no start ordering,
schedulerName kai-scheduler and its queue label, ModelExpress client settings with a modelCacheRef)
and from Grove v0.1.0-alpha.6's naming (`<set>-0-gang-<copy>-leader-0` under the headless Service
`<set>-0`, at most 45 characters for set + group + clique names). Every Grove and KAI object is
checked against the CRDs copied into tests/data/crds.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from modelplane.api import Fleet, InferenceCluster, ServingStack
from modelplane.compose import Settings
from modelplane.compose.stack import serving_stack
from tests.compose.helpers import FLEET, compose, deployment, engine, everything, find, member, model_cache
from tests.compose.schemas import problems


def dynamo(cluster: InferenceCluster) -> InferenceCluster:
    return cluster.model_copy(update={"spec": cluster.spec.model_copy(update={"stack": ServingStack.DYNAMO})})


DYNAMO = Fleet(clusters=tuple(dynamo(c) for c in FLEET.clusters), classes=FLEET.classes, gateway=FLEET.gateway)
MIXED = Fleet(clusters=(dynamo(FLEET.clusters[0]), FLEET.clusters[1]), classes=FLEET.classes, gateway=FLEET.gateway)


def gang(copies: int = 1, nodes: int = 2, name: str = "kimi", **kwargs: object):
    return deployment(name, engine("kimi", member("Leader", claims=False), member("Worker", nodes=nodes),
                                   copies=copies), **kwargs)


def test_a_gang_is_one_pod_clique_set_with_one_scaling_group_of_leader_and_worker() -> None:
    rendered = compose(gang(copies=3, nodes=2), fleet=DYNAMO)
    pcs = find(everything(rendered), "PodCliqueSet")
    assert not [m for m in everything(rendered) if m["kind"] == "LeaderWorkerSet"]
    spec = pcs["spec"]
    assert spec["replicas"] == 1
    assert spec["template"]["cliqueStartupType"] == "CliqueStartupTypeAnyOrder"
    assert spec["template"]["podCliqueScalingGroups"] == [{"name": "gang", "cliqueNames": ["leader", "worker"],
                                                          "replicas": 3}]
    cliques = {c["name"]: c for c in spec["template"]["cliques"]}
    assert {name: (c["spec"]["replicas"], c["spec"]["minAvailable"]) for name, c in cliques.items()} == {
        "leader": (1, 1), "worker": (2, 2)}
    assert all("startsAfter" not in c["spec"] for c in cliques.values())
    for c in cliques.values():
        assert c["spec"]["podSpec"]["schedulerName"] == "kai-scheduler"
        assert c["labels"]["kai.scheduler/queue"] == "modelplane"
    assert cliques["leader"]["labels"]["modelplane.ai/serving"] == "true"
    assert problems(pcs) == []


def test_the_leader_address_is_the_copy_leaders_dns_name_under_grove_headless_service() -> None:
    rendered = compose(gang(), fleet=DYNAMO)
    pcs = find(rendered.clusters["gpu-a"], "PodCliqueSet")
    name, namespace = pcs["metadata"]["name"], pcs["metadata"]["namespace"]
    for c in pcs["spec"]["template"]["cliques"]:
        env = {var["name"]: var for var in c["spec"]["podSpec"]["containers"][0]["env"]}
        assert env["MODELPLANE_GANG_COPY"]["valueFrom"] == {
            "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.labels['grove.io/podcliquescalinggroup-replica-index']"}}
        assert env["MODELPLANE_LEADER_ADDRESS"]["value"] == (
            f"{name}-0-gang-$(MODELPLANE_GANG_COPY)-leader-0.{name}-0.{namespace}.svc.cluster.local")
        assert "MODELPLANE_RANK" not in env
        assert list(env).index("MODELPLANE_GANG_COPY") < list(env).index("MODELPLANE_LEADER_ADDRESS")


def test_grove_names_fit_its_45_character_limit_and_a_hostname() -> None:
    rendered = compose(gang(name="a-very-long-deployment-name-for-a-frontier-model"), fleet=DYNAMO)
    pcs = find(everything(rendered), "PodCliqueSet")
    name = pcs["metadata"]["name"]
    assert len(name) + len("gang") + len("leader") <= 45
    assert len(f"{name}-0-gang-63-leader-0") <= 63


def test_a_standalone_engine_stays_a_deployment_scheduled_by_kai() -> None:
    rendered = compose(deployment("qwen"), fleet=DYNAMO)
    template = find(everything(rendered), "Deployment", "qwen")["spec"]["template"]
    assert template["spec"]["schedulerName"] == "kai-scheduler"
    assert template["metadata"]["labels"]["kai.scheduler/queue"] == "modelplane"
    assert [p for m in everything(rendered) for p in problems(m)] == []


def test_engines_with_a_model_cache_get_the_modelexpress_client_settings_and_no_flag() -> None:
    rendered = compose(deployment("qwen", cache="weights"), caches=(model_cache("weights"),), fleet=DYNAMO)
    container = find(everything(rendered), "Deployment", "qwen")["spec"]["template"]["spec"]["containers"][0]
    env = {var["name"]: var["value"] for var in container["env"] if "value" in var}
    address = "modelexpress.modelexpress.svc.cluster.local:8001"
    assert env["MX_SERVER_ADDRESS"] == address and env["MODEL_EXPRESS_URL"] == address
    assert not any("modelexpress" in arg for arg in container.get("args", ()))


def test_only_the_dynamo_cluster_of_a_mixed_fleet_uses_kai_and_grove() -> None:
    rendered = compose(deployment("qwen", replicas=2), gang(replicas=2), fleet=MIXED)
    schedulers = {cluster: {(m["kind"], m["spec"]["template"]["spec"].get("schedulerName")) for m in manifests
                            if m["kind"] == "Deployment"} for cluster, manifests in rendered.clusters.items()}
    assert schedulers == {"gpu-a": {("Deployment", "kai-scheduler")}, "gpu-b": {("Deployment", None)}}
    assert {m["kind"] for m in rendered.clusters["gpu-a"]} >= {"PodCliqueSet"}
    assert "LeaderWorkerSet" in {m["kind"] for m in rendered.clusters["gpu-b"]}
    assert "PodCliqueSet" not in {m["kind"] for m in rendered.clusters["gpu-b"]}


def test_without_a_cache_no_modelexpress_settings() -> None:
    container = find(everything(compose(deployment("qwen"), fleet=DYNAMO)), "Deployment")["spec"]["template"]["spec"][
        "containers"][0]
    assert not any(var["name"] in ("MX_SERVER_ADDRESS", "MODEL_EXPRESS_URL") for var in container.get("env", ()))


def test_a_dynamo_cluster_installs_grove_kai_and_modelexpress_instead_of_lws() -> None:
    cluster = DYNAMO.clusters[0]
    names = [addon.name for addon in serving_stack(cluster, Settings())]
    assert "lws" not in names
    assert {"kai-scheduler", "kai-queue", "grove", "modelexpress-crds", "modelexpress"} <= set(names)
    assert names.index("kai-scheduler") < names.index("kai-queue") and names.index("kai-scheduler") < names.index("grove")
    assert "lws" in [addon.name for addon in serving_stack(FLEET.clusters[1], Settings())]
    [queue] = next(a for a in serving_stack(cluster, Settings()) if a.name == "kai-queue").objects
    assert problems(queue) == []


@pytest.mark.parametrize(("field", "addon", "value"), [
    ("grove_version", "grove", "v0.1.0-alpha.6"), ("kai_scheduler_version", "kai-scheduler", "v0.16.8"),
    ("modelexpress_version", "modelexpress", "0.4.1")])
def test_the_dynamo_pins_are_the_issues_and_overridable(field: str, addon: str, value: str) -> None:
    cluster = DYNAMO.clusters[0]
    pinned = next(a for a in serving_stack(cluster, Settings()) if a.name == addon)
    assert pinned.version == value
    overridden = next(a for a in serving_stack(cluster, replace(Settings(), **{field: "9.9.9"})) if a.name == addon)
    assert overridden.version == "9.9.9"
