"""Stacks by role (`modelplane.pulumi.roles`) under mocks: the real `__main__.py` as the split layout's
fleet stack and as each cluster's workload stack, held against the single stack of the same config
(the dev stack, examples/multi-cloud): the workload stacks together register exactly the
single stack's per-cluster resources, with the same logical names and inputs."""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass, field
from typing import Any

import pulumi
import pytest

from modelplane.api import load
from modelplane.pulumi.roles import SECRETS, SHARE
from modelplane.pulumi.stack_outputs import INVOKE as STACK_OUTPUTS
from modelplane.scheduling import place
from tests.pulumi.harness import KUBECONFIG, ROOT, Engine, Run, dev_config, is_secret, run_program, unwrap

CLUSTERS = ("eks-us-west", "gke-us-central", "onprem-us-east")
FLEET_STACK = "organization/modelplane/fleet"
OWN_STACK = "organization/modelplane/dev"
"""The stack the program runs as (tests/pulumi/harness.py: project modelplane, stack dev)."""
KUBERNETES = "kubernetes:"


@dataclass
class Referencing(Engine):
    """The mock engine, answering the builtin `readStackOutputs` invoke from `stacks` (stack -> outputs)."""

    stacks: dict[str, dict[str, Any]] = field(default_factory=dict)
    read: list[str] = field(default_factory=list)

    def call(self, args: pulumi.runtime.MockCallArgs) -> Any:
        if args.token != STACK_OUTPUTS:
            return super().call(args)
        name = args.args["name"]
        self.read.append(name)
        if name == OWN_STACK and name not in self.stacks:
            return {"name": name, "outputs": {}, "secretOutputNames": []}  # the stack's first run
        if name not in self.stacks:
            raise RuntimeError(f"unknown stack {name!r}")  # what the engine says (pulumi/pulumi#19202)
        outputs = self.stacks[name]
        return {"name": name, "outputs": outputs, "secretOutputNames": sorted(k for k in outputs if k.startswith(SECRETS))}


def role(name: str, **extra: str) -> tuple[dict[str, str], list[str]]:
    return dev_config(**{"modelplane:role": name, **extra})


def cluster_role(cluster: str) -> tuple[dict[str, str], list[str]]:
    return role("cluster", **{"modelplane:cluster": cluster, "modelplane:fleetStack": FLEET_STACK})


def kube(run: Run) -> dict[tuple[str, str], dict[str, Any]]:
    """Every Kubernetes object (type, logical name) -> its inputs, secrets unwrapped."""
    return {(r.typ, r.name): unwrap(r.inputs) for r in run.engine.registered
            if r.typ.startswith(KUBERNETES) and not r.typ.startswith("pulumi:providers")}


@pytest.fixture(scope="module")
def single() -> Run:
    return run_program(Engine())


def stack_of(cluster: str) -> str:
    return f"organization/modelplane/{cluster}"


def enrolled(*clusters: str) -> tuple[dict[str, str], list[str]]:
    return role("fleet", **{"modelplane:clusterStacks": json.dumps({c: stack_of(c) for c in clusters})})


def exported(fleet: Run) -> dict[str, dict[str, Any]]:
    """What a workload stack reads of the fleet stack: its outputs for the clusters."""
    return {FLEET_STACK: {key: value for key, value in fleet.outputs.items() if key.startswith((SHARE, SECRETS))}}


def shares(run: Run) -> dict[str, dict[str, Any]]:
    """Cluster -> its `workloadStack-<cluster>` output."""
    return {key.removeprefix(SHARE): value for key, value in run.outputs.items() if key.startswith(SHARE)}


@pytest.fixture(scope="module")
def first() -> Run:
    """The fleet stack's first run: no workload stack exists yet."""
    return run_program(Referencing(), role("fleet"))


@pytest.fixture(scope="module")
def workloads(first: Run) -> dict[str, Run]:
    return {cluster: run_program(Referencing(stacks=copy.deepcopy(exported(first))), cluster_role(cluster))
            for cluster in CLUSTERS}


@pytest.fixture(scope="module")
def fleet(first: Run, workloads: dict[str, Run]) -> Run:
    """The fleet stack once every workload stack has run and is enrolled in modelplane:clusterStacks."""
    engine = Referencing(state=copy.deepcopy(first.engine.state),
                         stacks={stack_of(c): run.outputs for c, run in workloads.items()})
    return run_program(engine, enrolled(*CLUSTERS))


def test_the_fleet_stack_holds_no_serving_stack_and_no_workload(fleet: Run, single: Run) -> None:
    types = {r.typ for r in fleet.engine.registered}
    assert "modelplane:index:ServingStack" not in types
    placed = {name for (typ, name) in kube(fleet)}
    # What stays: the fleet gateway's objects on its host (gke-us-central), the clusters' own objects.
    assert placed, "the fleet gateway's objects are the fleet stack's"
    assert placed < {name for (typ, name) in kube(single)}
    assert not [name for name in placed if "-deployment-" in name or "-leaderworkerset-" in name]
    assert fleet.outputs["placement"] == single.outputs["placement"]


def test_the_fleet_routes_to_a_cluster_once_its_stack_reports_its_address(first: Run, fleet: Run) -> None:
    def to_clusters(run: Run) -> list[str]:  # the Backends aimed at a cluster's gateway (not an external one)
        return sorted(name for (typ, name) in kube(run) if typ.endswith(":Backend") and "/gateway-" in name)

    assert to_clusters(first) == [], "no workload stack has reported a gateway address on the first run"
    assert to_clusters(fleet) == [
        "modelplane:gke-us-central:Backend:ml-team/gateway-eks-us-west",
        "modelplane:gke-us-central:Backend:ml-team/gateway-gke-us-central"]
    assert any("does not route to eks-us-west, gke-us-central, onprem-us-east yet" in line for line in first.logs)


def test_the_fleet_gateway_waits_for_its_host_clusters_stack(first: Run, fleet: Run) -> None:
    # The engine refused it (tests/e2e/test_split_stacks.py): its namespace is the host's serving stack's.
    assert all(name.startswith(tuple(f"modelplane:{c}-" for c in CLUSTERS)) for _, name in kube(first)), \
        "only the clusters' own objects (storage classes, drivers) before a workload stack ran"
    assert any("the fleet gateway on gke-us-central waits for gke-us-central's workload stack" in line
               for line in first.logs)
    assert ("kubernetes:gateway.networking.k8s.io/v1:Gateway",
            "modelplane-gateway:gke-us-central:Gateway:modelplane-system/fleet") in kube(fleet)
    assert first.outputs["serviceUrls"] == {} and fleet.outputs["serviceUrls"]
    assert fleet.outputs["gatewayAddresses"] == {"eks-us-west": "a1.elb.us-west-2.amazonaws.com",
                                                 "gke-us-central": "34.120.0.1", "onprem-us-east": "10.40.0.5"}


def test_the_fleet_stack_exports_each_clusters_share(fleet: Run) -> None:
    manifests = load([ROOT / "examples" / "multi-cloud"])
    expected = place(manifests.fleet, manifests.workloads)
    shared = shares(fleet)
    assert sorted(shared) == list(CLUSTERS)
    assert sorted(key.removeprefix(SECRETS) for key in fleet.outputs if key.startswith(SECRETS)) == list(CLUSTERS)
    for cluster in CLUSTERS:
        entry = shared[cluster]
        assert json.loads(entry["replicas"]) == [r.model_dump(mode="json", by_alias=True)
                                     for r in sorted(expected.replicas, key=lambda r: r.slot) if r.cluster == cluster]
        assert entry["draining"] == []  # no workload stack has reported yet: nothing to drain
        assert entry["installPrerequisites"] is True
        assert entry["secrets"] == [["ml-team", "hf-token", "HF_TOKEN"]]
        assert isinstance(entry["objects"], str), "one JSON text: one property value, not one per field"


def deployments_in(entry: dict[str, Any]) -> list[str]:
    return sorted(o["metadata"]["name"] for o in json.loads(entry["objects"]) if o["kind"] == "ModelDeployment")


def test_each_share_holds_only_the_deployments_its_cluster_runs_or_stages_a_cache_for(fleet: Run) -> None:
    # examples/multi-cloud, placed as FIRST in tests/pulumi/test_placement_provider.py. The two deployments
    # with a ModelCache (kimi-k2-instruct, qwen3-coder) reference caches with their own clusterSelector,
    # staged where it says whoever uses them: each share holds the deployments running there only.
    # Every other kind stays whole.
    assert {cluster: deployments_in(entry) for cluster, entry in shares(fleet).items()} == {
        "eks-us-west": ["llama-70b-pd", "qwen3-8b"],
        "gke-us-central": ["qwen-demo", "qwen3-8b"],
        "onprem-us-east": ["kimi-k2-instruct", "qwen3-coder"]}
    everything = load([ROOT / "examples" / "multi-cloud"])
    for entry in shares(fleet).values():
        kinds = sorted(o["kind"] for o in json.loads(entry["objects"]) if o["kind"] != "ModelDeployment")
        assert kinds == sorted(o.kind for o in everything.objects() if o.kind != "ModelDeployment")


def test_the_kubeconfigs_and_secret_values_leave_the_fleet_stack_as_secrets(fleet: Run) -> None:
    registered = {key.removeprefix(SECRETS): value for key, value in fleet.outputs.items() if key.startswith(SECRETS)}
    assert registered["onprem-us-east"]["kubeconfig"] == KUBECONFIG
    assert sorted(registered) == list(CLUSTERS)
    assert KUBECONFIG not in str(shares(fleet))


def test_the_workload_stacks_register_what_the_single_stack_does_on_each_cluster(
        single: Run, fleet: Run, workloads: dict[str, Run]) -> None:
    expected = kube(single)
    got: dict[tuple[str, str], dict[str, Any]] = {}
    for run in workloads.values():
        assert not set(got) & set(kube(run)), "one object in two stacks"
        got.update(kube(run))
    got.update(kube(fleet))
    assert sorted(got) == sorted(expected)
    differing = sorted(key for key in expected if got[key] != expected[key])
    assert differing == []


def test_a_workload_stack_uses_only_its_clusters_kubeconfig(workloads: dict[str, Run], single: Run) -> None:
    run = workloads["onprem-us-east"]
    providers = run.engine.of_type("pulumi:providers:kubernetes")
    assert [p.name for p in providers] == ["modelplane:onprem-us-east-existing-k8s"], "the single stack's provider name"
    assert is_secret(providers[0].inputs["kubeconfig"])
    assert unwrap(providers[0].inputs["kubeconfig"]) == KUBECONFIG
    assert {r.provider_name for r in run.engine.registered if r.typ.startswith(KUBERNETES)} == {
        "modelplane:onprem-us-east-existing-k8s"}
    names = {p.name for p in single.engine.of_type("pulumi:providers:kubernetes")}
    for cluster, run in workloads.items():
        assert [p.name for p in run.engine.of_type("pulumi:providers:kubernetes")] == [f"modelplane:{cluster}-{{}}-k8s".format(
            {"eks-us-west": "eks", "gke-us-central": "gke", "onprem-us-east": "existing"}[cluster])]
        assert run.engine.of_type("pulumi:providers:kubernetes")[0].name in names


def test_a_workload_stack_reports_what_it_applied(fleet: Run, workloads: dict[str, Run]) -> None:
    for cluster, run in workloads.items():
        assert run.outputs["applied"] == shares(fleet)[cluster]["replicas"]
        assert run.outputs["gatewayAddress"]


def test_a_cluster_the_fleet_does_not_export_is_an_error_and_registers_nothing(fleet: Run) -> None:
    engine = Referencing(stacks=exported(fleet))
    with pytest.raises(Exception, match="exports nothing for cluster 'gone'.*changes nothing"):
        run_program(engine, cluster_role("gone"))
    assert not [r for r in engine.registered if r.typ.startswith(KUBERNETES)]


def test_a_fleet_stack_not_updated_since_the_one_output_layout_is_an_error_and_registers_nothing(fleet: Run) -> None:
    # What a fleet stack of the previous version exported: every share in one `workloadStacks` output.
    earlier = {"workloadStacks": {"objects": [], "clusters": {c: shares(fleet)[c] for c in CLUSTERS}},
               "workloadSecrets": {"kubeconfigs": {c: KUBECONFIG for c in CLUSTERS}, "secrets": {}}}
    engine = Referencing(stacks={FLEET_STACK: earlier})
    with pytest.raises(Exception, match=r"layout of an earlier modelplane version \(one `workloadStacks` output, no "
                                        r"`workloadStack-eks-us-west`\): run `pulumi up` on the fleet stack first.*"
                                        r"changes nothing"):
        run_program(engine, cluster_role("eks-us-west"))
    assert not [r for r in engine.registered if r.typ.startswith(KUBERNETES) or r.typ.startswith("modelplane:")]


def test_no_stack_keeps_a_copy_of_another_stacks_outputs(fleet: Run, workloads: dict[str, Run]) -> None:
    for run in (fleet, *workloads.values()):
        assert not [r for r in run.engine.registered if r.typ == "pulumi:pulumi:StackReference"]
    assert sorted(fleet.engine.read) == sorted(stack_of(c) for c in CLUSTERS), \
        "every cluster's stack reports its address: the fleet stack's own last outputs are not read"
    assert all(run.engine.read == [FLEET_STACK] for run in workloads.values())


def test_after_a_move_from_one_stack_the_fleet_keeps_its_gateway_and_routes_before_any_cluster_stack_ran(
        single: Run, fleet: Run) -> None:
    # The first fleet run after `pulumi state move` (docs/pulumi.md): no cluster stack has run, the
    # stack's own last outputs (the single stack's) hold every cluster's gateway address.
    last = {"gatewayAddresses": {**single.outputs["gatewayAddresses"], "retired": "10.0.0.9"}}
    moved = run_program(Referencing(state=copy.deepcopy(single.engine.state), stacks={OWN_STACK: last}), role("fleet"))
    assert sorted(kube(moved)) == sorted(kube(fleet)), "the fleet gateway and every route stay"
    assert not any("waits for" in line or "does not route to" in line for line in moved.logs)
    assert moved.outputs["gatewayAddresses"] == single.outputs["gatewayAddresses"], "only the fleet's clusters"
    last["gatewayAddresses"]["onprem-us-east"] = 7
    damaged = run_program(Referencing(state=copy.deepcopy(single.engine.state), stacks={OWN_STACK: last}), role("fleet"))
    assert "onprem-us-east" not in damaged.outputs["gatewayAddresses"], "read back, never trusted"


def test_the_fleet_reads_the_applied_list_of_a_workload_stack_of_the_earlier_version(
        fleet: Run, workloads: dict[str, Run]) -> None:
    # The fleet stack is updated first; until each workload stack runs again its `applied` is a list.
    stacks = {stack_of(c): {**run.outputs, "applied": json.loads(run.outputs["applied"])} for c, run in workloads.items()}
    earlier = run_program(Referencing(state=copy.deepcopy(fleet.engine.state), stacks=stacks), enrolled(*CLUSTERS))
    assert shares(earlier) == shares(fleet)
    stacks[stack_of("eks-us-west")]["applied"] = "[{"
    with pytest.raises(Exception, match=r"workload stack organization/modelplane/eks-us-west: its `applied` output is "
                                        r"not a list of replicas \(\(replicas\): not JSON text"):
        run_program(Referencing(state=copy.deepcopy(fleet.engine.state), stacks=stacks), enrolled(*CLUSTERS))


def test_an_unknown_role_is_an_error() -> None:
    with pytest.raises(Exception, match="modelplane:role is 'both'; use single, fleet, cluster"):
        run_program(Engine(), role("both"))


def moved_away(workloads: dict[str, Run], deployment: str, source: str, target: str) -> dict[str, dict[str, Any]]:
    """The workload stacks' outputs as if `deployment`'s replica on `target` had run on `source` until
    now and `target`'s stack had not applied it yet (a move from `source` to `target` under way)."""
    applied = {c: json.loads(run.outputs["applied"]) for c, run in workloads.items()}
    moving = [r for r in applied[target] if r["deployment"] == deployment]
    assert len(moving) == 1
    applied[target].remove(moving[0])
    applied[source].append({**moving[0], "cluster": source, "index": 0})
    return {stack_of(c): {**run.outputs, "applied": json.dumps(applied[c])} for c, run in workloads.items()}


def test_a_moved_replica_drains_on_its_old_cluster_until_the_new_clusters_stack_applied_it(
        fleet: Run, workloads: dict[str, Run]) -> None:
    stacks = moved_away(workloads, "ml-team/qwen-demo", "eks-us-west", "gke-us-central")
    during = run_program(Referencing(state=copy.deepcopy(fleet.engine.state), stacks=stacks), enrolled(*CLUSTERS))
    east = shares(during)["eks-us-west"]
    assert east["draining"] == ["ml-team/qwen-demo#0"]
    assert ["ml-team/qwen-demo" in r["deployment"] for r in json.loads(east["replicas"])].count(True) == 1
    route = ("kubernetes:gateway.networking.k8s.io/v1:HTTPRoute", "modelplane:gke-us-central:HTTPRoute:ml-team/qwen")

    def backends(run: Run) -> list[str]:  # where the fleet gateway sends ml-team/qwen (served by qwen-demo)
        return [ref["name"] for rule in kube(run)[route]["spec"]["rules"] for ref in rule["backendRefs"]]

    assert backends(fleet) == ["gateway-gke-us-central"]
    assert backends(during) == ["gateway-eks-us-west", "gateway-gke-us-central"], "still routed to the draining copy"
    stacks[stack_of("gke-us-central")]["applied"] = workloads["gke-us-central"].outputs["applied"]
    after = run_program(Referencing(state=copy.deepcopy(fleet.engine.state), stacks=stacks), enrolled(*CLUSTERS))
    assert shares(after)["eks-us-west"]["draining"] == []
    assert shares(after) == shares(fleet)


def test_the_fleet_refuses_to_drop_a_cluster_whose_stack_still_runs_replicas(
        fleet: Run, workloads: dict[str, Run]) -> None:
    stacks = {stack_of(c): run.outputs for c, run in workloads.items()}
    stacks[stack_of("retired")] = {"applied": json.dumps([{**json.loads(workloads["eks-us-west"].outputs["applied"])[0],
                                                           "cluster": "retired"}])}
    engine = Referencing(state=copy.deepcopy(fleet.engine.state), stacks=stacks)
    with pytest.raises(Exception, match=r"retired \(stack organization/modelplane/retired\): 1 replica\(s\) still run"):
        run_program(engine, enrolled(*CLUSTERS, "retired"))


def kubernetes_providers(run: Run) -> list[str]:
    return sorted(p.name for p in run.engine.of_type("pulumi:providers:kubernetes"))


def test_the_fleet_stack_registers_a_clusters_provider_only_where_it_deploys(
        first: Run, fleet: Run, single: Run) -> None:
    # The engine starts a plugin process per provider resource. The single stack deploys to every cluster;
    # the fleet stack to the fleet gateway's host (gke-us-central) and, because provisioning puts the RWX
    # StorageClass there, to each cloud cluster it creates (GKE, EKS), never to the existing onprem-us-east.
    assert kubernetes_providers(single) == ["modelplane:eks-us-west-eks-k8s", "modelplane:gke-us-central-gke-k8s",
                                            "modelplane:onprem-us-east-existing-k8s"]
    assert kubernetes_providers(first) == kubernetes_providers(fleet) == [
        "modelplane:eks-us-west-eks-k8s", "modelplane:gke-us-central-gke-k8s"]
    used = {r.provider_name for r in fleet.engine.registered if r.typ.startswith(KUBERNETES)}
    assert used == set(kubernetes_providers(fleet)), "each provider registered is used"
