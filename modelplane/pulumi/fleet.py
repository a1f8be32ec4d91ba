"""`Modelplane`: the whole fleet from loaded manifests, the component `__main__.py` hands off to.

Order of work (DESIGN section 2, one direction):
0. the `FleetPlacement` dynamic resource is registered first (its inputs are the manifests alone), so
   that each cluster's node groups can be sized from what the placement holds on them (`pool_nodes`);
1. an `InferenceCluster` per cluster (GKE/EKS/AKS/Nebius/Vultr/Existing) -> kubeconfig, provider, RWX class;
2. a `ServingStack` per cluster (compose's add-ons, `compose.cluster_stack`, with the fleet
   gateway backend's on the cluster that hosts it: they do not depend on the placement, so they are
   registered before it is known; converge asserts that `render` agrees);
3. the `InferenceGateway` on the cluster the InferenceGateway manifest names, or, without
   `spec.cluster`, on the control cluster (control-cluster mode): that cluster gets a kubernetes
   Provider from the same kubeconfig the manifests were read with (in-cluster: the ambient
   configuration) and a `ServingStack` of the gateway backend's add-ons only
   (`compose.gateways.control_stack`; no placement targets it), both named `_control-...`;
4. the `FleetPlacement` dynamic resource: check() places every replica, sticky across runs;
5. from the known placement (fails loudly when unknown): compose renders, and
   `workloads.register_placed` registers every workload and fleet route; unschedulable deployments
   and compose's findings are `pulumi.log.warn`ings;
6. in control-cluster mode, after those, `status.FleetStatus`: `pulumi up` writes back each object's status.
With `split` (the fleet stack of the split layout, `roles`), steps 2 and 5 stop at the fleet gateway:
each cluster's serving stack and workloads are its workload stack's (so the fleet stack reads, and with that
registers, the kubernetes provider of the fleet gateway's cluster only, besides those provisioning itself
needs: `ClusterComponent.provider`), and the fleet stack exports
what they need (`workload_stacks`, `workload_secrets`) with make-before-break across stacks
(`scheduling.handoff`); the fleet gateway on a workload cluster waits until that cluster's stack
reports its address (`roles.gateway_waits`: its serving stack holds the gateway's namespace and class). Stack outputs come from the attributes: `placement_summary` (where each replica runs),
`service_urls`, `gateway_address` (the fleet gateway's), `gateway_addresses` (each cluster's
inference Gateway).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, NotRequired, TypedDict

import pulumi
import pulumi_kubernetes as k8s
from pulumi import ResourceOptions

from modelplane.api import CONTROL_CLUSTER, Manifests, Workloads
from modelplane.api.slices import Published
from modelplane.api import InferenceGateway as GatewayManifest
from modelplane.compose import Settings, class_drivers, cluster_stack, render, secret_placeholder, storage_class
from modelplane.compose.gateways import control_stack
from modelplane.compose.stranded import with_stranded
from modelplane.invariants import InvariantError, present
from modelplane.pulumi import roles
from modelplane.pulumi.clusters import InferenceCluster, InferenceClusterArgs, ProviderSettings
from modelplane.pulumi.clusters.contract import RWX_STORAGE_CLASS
from modelplane.pulumi.gateway import InferenceGateway
from modelplane.pulumi.names import aliased, legacy_name, provider_identifier, provider_name, scope, serving_name
from modelplane.pulumi.placement import FleetPlacement, from_wire, known_placement
from modelplane.pulumi.serving import ServingStack
from modelplane.pulumi.workloads import Target, register_placed
from modelplane.report.text import replica_text
from modelplane.scheduling import Placement
from modelplane.scheduling.placement import Replica
from modelplane.scheduling.cost import placement_cost
from modelplane.scheduling.diff import pool_use

if TYPE_CHECKING:
    from modelplane.pulumi.control_cluster import ControlCluster

FLEET_GATEWAY = "_fleet"
"""The key of the fleet gateway's address in `gateway_addresses` (the others are cluster names)."""
SecretKey = tuple[str, str, str]
"""(namespace, Secret name, key) of a Secret compose delivers (e.g. a ModelCache's authSecret)."""


class ModelplaneArgs(TypedDict):
    manifests: Manifests
    """The validated fleet and workloads (`modelplane.api.loader`)."""
    strict: NotRequired[bool]
    """True: an unschedulable deployment is an error. Default: False (a warning; the rest converges)."""
    settings: NotRequired[Settings]
    """Pinned images and chart versions of the serving stack. Default: `compose.Settings()`."""
    kubeconfigs: NotRequired[Mapping[str, pulumi.Input[str]]]
    """Existing cluster name -> its kubeconfig (secret). Required for every Existing cluster."""
    secrets: NotRequired[Mapping[SecretKey, pulumi.Input[str]]]
    """Values of the Secrets compose delivers; one without a value is not managed (a warning).
    Default: none."""
    prerequisites_installed_on: NotRequired[frozenset[str]]
    """The clusters whose serving stack (Helm charts, CRDs) the stack installs; on the others only
    modelplane's own GatewayClass and inference Gateway are created. `CONTROL_CLUSTER` stands for
    the control cluster's stack. Default: every cluster, and the control cluster."""
    skip_await: NotRequired[bool]
    """True: workloads and charts carry `pulumi.com/skipAwait` (Gateways still wait for their
    address). Default: False."""
    gateway_addresses: NotRequired[Mapping[str, str]]
    """Gateway addresses no controller writes (stack config `gatewayAddresses`): a cluster's name
    for its inference Gateway, `FLEET_GATEWAY` for the fleet gateway; those Gateways do not wait and
    report this address. Default: none (every Gateway waits for its controller's)."""
    gcp_project: NotRequired[str | None]
    """Project of GKE clusters whose manifest names none (stack config `gcp:project`). Default: None
    (an error if a GKE cluster's manifest names no project)."""
    credentials: NotRequired[Mapping[str, ProviderSettings]]
    """Credentials sets by name (stack config `modelplane:credentials`): the cloud provider arguments
    of the clusters whose `credentials.name` picks them. Default: none, every cluster uses the
    stack's ambient provider configuration (and naming another set is an error)."""
    observed: NotRequired[dict[str, Any]]
    """What each workload cluster reported this run (`scheduling.observed.observations_to_json`; control-cluster
    mode reads it, `pulumi/observe.py`): the placement plans against it. Default: every cluster as declared."""
    published: NotRequired[Mapping[str, Published | str]]
    """What each observed cluster's nodes publish, or why it was not read this run (control-cluster mode,
    `pulumi/observe.py`): its InferenceCluster's DevicesMatchClasses condition. Default: none checked."""
    control_cluster: NotRequired[ControlCluster | None]
    """The control cluster the manifests were read from (stack config `modelplane:source: cluster`): after
    the workloads, `pulumi up` writes each object's status back to it (`status.FleetStatus`), and an
    InferenceGateway without `spec.cluster` runs on it. Default: None (manifests from files; no status
    is written; such a gateway is an error)."""
    split: NotRequired[Mapping[str, roles.ClusterReport] | None]
    """The fleet stack of the split layout (stack config `modelplane:role: fleet`, `roles`): each
    cluster's serving stack and workloads are left to its workload stack, which reads them from the
    `workload_stacks` output; this maps each enrolled cluster to what its stack reports. Default:
    None (one stack holds everything)."""


class Modelplane(pulumi.ComponentResource):
    """GPU clusters across clouds, their serving stacks, the placement, the workloads and the fleet routing."""

    clusters: dict[str, InferenceCluster]
    """Each cluster by name: its `kubeconfig` (secret) and `provider` (registered on its first read), for your
    own resources."""
    serving_stacks: dict[str, ServingStack]
    """Each cluster's serving stack by cluster name."""
    control_stack: ServingStack | None
    """The control cluster's stack (the gateway backend's add-ons), when the fleet gateway runs there."""
    gateway: InferenceGateway | None
    """The fleet gateway, when the manifests declare an InferenceGateway."""
    placement: FleetPlacement
    """The dynamic resource that keeps the placement in the stack's state."""
    placement_summary: pulumi.Output[dict[str, Any]]
    """Deployment -> `{"scheduled": "2/2", "replicas": ["cluster#index (engine: pool)", ...]}`."""
    service_urls: pulumi.Output[dict[str, str]]
    """ModelService `namespace/name` -> its URL on the fleet gateway (empty without a gateway)."""
    gateway_address: pulumi.Output[str]
    """The fleet gateway's external address, what the InferenceGateway's `status.address` reports
    (empty without a gateway)."""
    gateway_addresses: pulumi.Output[dict[str, str]]
    """Cluster -> the external address of its inference Gateway."""
    fleet_cost_per_hour: pulumi.Output[dict[str, Any]]
    """What the fleet costs per hour from its classes' `spec.pricing` (`modelplane.scheduling.cost`):
    `{"perHour": {"USD": "181.96"}, "unpricedNodes": 4}`."""
    deployment_cost_per_hour: pulumi.Output[dict[str, Any]]
    """Deployment -> what the nodes it holds cost per hour, in the same shape."""
    workload_stacks: dict[str, pulumi.Output[dict[str, Any]]] | None
    """With `split`: cluster -> what its workload stack reads (`roles.workload_stacks`); None otherwise."""
    workload_secrets: dict[str, pulumi.Output[dict[str, Any]]] | None
    """With `split`: cluster -> its kubeconfig and the Secret values, as one secret; None otherwise."""

    def __init__(self, name: str, args: ModelplaneArgs, opts: ResourceOptions | None = None):
        super().__init__("modelplane:index:Modelplane", name, {}, opts)
        manifests = args["manifests"]
        settings = args.get("settings", Settings())
        kubeconfigs = args.get("kubeconfigs", {})
        fleet = manifests.fleet
        skip_await = args.get("skip_await", False)
        given = args.get("gateway_addresses", {})
        installed_on = args.get("prerequisites_installed_on",
                                frozenset({CONTROL_CLUSTER, *(c.name for c in fleet.clusters)}))
        control = args.get("control_cluster")
        split = args.get("split")
        child = ResourceOptions(parent=self)

        self.placement = FleetPlacement(f"{name}-placement", {"manifests": manifests,
                                                              "strict": args.get("strict", False),
                                                              "observed": args.get("observed", {})}, child)
        self.placement.corrections.apply(lambda corrections: warn_corrections(corrections or [], self))
        held = known_placement(self.placement.placement).apply(pool_nodes)
        self.clusters, self.serving_stacks = {}, {}
        for cluster in fleet.clusters:
            cluster_args: InferenceClusterArgs = {
                "cluster": cluster, "fleet": fleet, "gcp_project": args.get("gcp_project"),
                "credentials": args.get("credentials", {}),
                "rwx_storage_class": storage_class(cluster, settings) or RWX_STORAGE_CLASS,
                "pool_nodes": held.apply(lambda nodes, cluster=cluster.name: nodes.get(cluster, {}))}
            if cluster.name in kubeconfigs:
                cluster_args["kubeconfig"] = kubeconfigs[cluster.name]
            built = InferenceCluster(scope(name, cluster.name), cluster_args, aliased(child, cluster.name))
            self.clusters[cluster.name] = built
            if split is not None:
                continue
            self.serving_stacks[cluster.name] = ServingStack(serving_name(name, cluster.name), {
                "cluster": cluster.name,
                "addons": cluster_stack(cluster, settings, fleet.gateway, class_drivers(fleet, cluster)),
                "provider": built.provider,
                "anchor": built.anchor, "install_prerequisites": cluster.name in installed_on,
                "skip_await": skip_await, "gateway_address": given.get(cluster.name)},
                aliased(child, legacy_name(cluster.name, "serving")))

        def target(cluster: str) -> Target:
            built = self.clusters[cluster]
            return Target(built.provider, self.serving_stacks.get(cluster, built), built.anchor)

        # Split: the fleet stack deploys to the fleet gateway's cluster only, so only that cluster's provider is
        # read, which registers it (`ClusterComponent.provider`); a cluster's serving stack is in its workload stack.
        targets = {cluster: target(cluster) for cluster in self.clusters if split is None}
        self.gateway, self.control_stack = None, None
        if fleet.gateway is not None and fleet.gateway.host == CONTROL_CLUSTER:
            provider, self.control_stack = control_serving_stack(name, fleet.gateway, control, settings,
                                                                 CONTROL_CLUSTER in installed_on, skip_await, self)
            targets[CONTROL_CLUSTER] = Target(provider, self.control_stack, None)
        if fleet.gateway is not None and not roles.gateway_waits(fleet.gateway.host, split, self):
            if fleet.gateway.host not in targets:
                targets[fleet.gateway.host] = target(fleet.gateway.host)
            host = targets[fleet.gateway.host]
            self.gateway = InferenceGateway(f"{name}-gateway", {
                "gateway": fleet.gateway, "services": manifests.workloads.services,
                "provider": host.provider, "anchor": host.anchor, "after": [host.after],
                "address": given.get(FLEET_GATEWAY)}, child)
        stacks = {**self.serving_stacks, **({CONTROL_CLUSTER: self.control_stack} if self.control_stack else {})}
        secrets = {secret_placeholder(*key): pulumi.Output.secret(value)
                   for key, value in args.get("secrets", {}).items()}
        urls = self.gateway.urls if self.gateway else pulumi.Output.from_input({})
        address = self.gateway.address if self.gateway else pulumi.Output.from_input("")

        def converge(placement: Placement, kept: tuple[Replica, ...]) -> dict[str, Any]:
            handed = None if split is None else roles.fleet_handoff(placement, manifests, split)
            routed = placement if handed is None else handed.placement(placement)
            keys = list(args.get("secrets", {}))
            # The split layout's workload stacks render and apply their clusters' objects: here, none.
            rendered = (with_stranded(manifests, routed, kept, settings, secrets=keys) if handed is None
                        else render(manifests, routed, settings, secrets=keys, clusters=()))
            expected = rendered.addons if split is None else {c: a for c, a in rendered.addons.items() if c in stacks}
            if {cluster: stack.addons for cluster, stack in stacks.items()} != expected:
                raise InvariantError("compose's serving stack no longer matches `cluster_stack(cluster, settings, "
                                     "gateway)`, which the ServingStacks were registered from before the placement "
                                     "was known")
            for warning in rendered.warnings:
                pulumi.log.warn(str(warning), self)
            for key, status in placement.deployments.items():
                if status.short:
                    pulumi.log.warn(f"{key}: {status.scheduled}/{status.desired} replicas scheduled\n"
                                    + "\n".join(status.reasons)
                                    + f"\n(`modelplane explain {key} <manifests>` shows every cluster)", self)
            if handed is None:
                addresses = {cluster: stack.gateway_address for cluster, stack in self.serving_stacks.items()
                             if stack.gateway_address is not None}
                created = register_placed(name, rendered, targets, addresses, self.gateway, secrets, self, skip_await)
            else:
                created = roles.register_routes(name, rendered, targets, split, self.gateway, secrets, self,
                                                skip_await)
            if control is not None:
                from modelplane.pulumi.status import write_back

                write_back(f"{name}-status", control, manifests, placement, urls, address, list(created.values()), self,
                           self.placement.capacity if args.get("observed") else None, args.get("published"))
            shared = None if handed is None else roles.workload_stacks(
                manifests, handed, settings, skip_await, installed_on, keys)
            return {"summary": summary(placement, manifests.workloads), "workloadStacks": shared}

        # Observed capacity: stranded replicas keep their objects on their unreachable cluster (compose/stranded.py).
        stranded = self.placement.stranded if args.get("observed") else pulumi.Output.from_input(None)
        converged = pulumi.Output.all(known_placement(self.placement.placement), stranded).apply(
            lambda both: converge(both[0], Placement.from_json(from_wire(both[1])).replicas if both[1] else ()))
        self.workload_stacks, self.workload_secrets = None, None
        if split is None:
            self.gateway_addresses = pulumi.Output.all(
                **{cluster: stack.gateway_address for cluster, stack in self.serving_stacks.items()})
        else:
            self.gateway_addresses = pulumi.Output.from_input(
                {cluster: report.gateway_address for cluster, report in sorted(split.items()) if report.gateway_address})
            self.workload_stacks = {cluster: converged.apply(lambda done, cluster=cluster: done["workloadStacks"][cluster])
                                    for cluster in self.clusters}
            self.workload_secrets = {cluster: pulumi.Output.secret(pulumi.Output.from_input(
                {"kubeconfig": built.kubeconfig, "secrets": secrets})) for cluster, built in self.clusters.items()}
        self.placement_summary = converged.apply(lambda done: done["summary"])
        self.service_urls = urls
        self.gateway_address = address
        cost = known_placement(self.placement.placement).apply(lambda placement: placement_cost(fleet, placement))
        self.fleet_cost_per_hour = cost.apply(lambda c: c.fleet.to_json())
        self.deployment_cost_per_hour = cost.apply(lambda c: {key: d.to_json() for key, d in c.deployments.items()})
        # The per-deployment outputs (`placement_summary`, `deployment_cost_per_hour`: an entry per deployment) are
        # attributes only: the program exports them at the stack's root, and registering them here too doubled the
        # values every run converts and diffs (at 5,000 deployments, the largest left as data in the fleet stack).
        self.register_outputs({"serviceUrls": self.service_urls, "gatewayAddress": self.gateway_address,
                               "gatewayAddresses": self.gateway_addresses, "fleetCostPerHour": self.fleet_cost_per_hour})


def control_serving_stack(component: str, gateway: GatewayManifest, control: ControlCluster | None,
                          settings: Settings, install_prerequisites: bool, skip_await: bool, parent: pulumi.Resource
                          ) -> tuple[k8s.Provider, ServingStack]:
    """The control cluster's Provider (its kubeconfig made secret; in-cluster, the ambient configuration,
    which is the workspace pod's) and its stack of the gateway backend's add-ons; an error without a
    control cluster (manifests loaded with `control_cluster=True` but read from elsewhere)."""
    if control is None:
        raise pulumi.RunError(f"InferenceGateway {gateway.name}: without spec.cluster the gateway runs on the control "
                              "cluster, and these manifests were not read from one: set spec.cluster, or run in "
                              "control-cluster mode (stack config modelplane:source: cluster)")
    child = ResourceOptions(parent=parent)
    kubeconfig = pulumi.Output.secret(control.kubeconfig) if control.kubeconfig is not None else None
    provider = k8s.Provider(provider_name(component, CONTROL_CLUSTER), kubeconfig=kubeconfig,
                            cluster_identifier=provider_identifier(CONTROL_CLUSTER),
                            opts=aliased(child, legacy_name(CONTROL_CLUSTER, "k8s")))
    return provider, ServingStack(serving_name(component, CONTROL_CLUSTER), {
        "cluster": CONTROL_CLUSTER, "addons": control_stack(settings, gateway), "provider": provider,
        "install_prerequisites": install_prerequisites, "skip_await": skip_await, "workload": False},
        aliased(child, legacy_name(CONTROL_CLUSTER, "serving")))


def warn_corrections(corrections: list[str], resource: pulumi.Resource) -> None:
    """One warning for a previous placement that did not hold under unchanged inputs (`FleetPlacement.check`)."""
    if corrections:
        pulumi.log.warn("the previous placement in the stack's state did not hold, so it was planned again (every "
                        "replica that holds stays; `pulumi preview --diff` shows what moves):\n"
                        + "\n".join(corrections), resource)


def pool_nodes(placement: Placement) -> dict[str, dict[str, int]]:
    """Cluster -> pool -> the nodes the placement holds there (the members' `nodes`)."""
    held: dict[str, dict[str, int]] = {}
    for (cluster, pool), nodes in sorted(pool_use(placement).items()):
        held.setdefault(cluster, {})[pool] = nodes
    return held


def summary(placement: Placement, workloads: Workloads) -> dict[str, Any]:
    """Where each replica runs, as `modelplane plan` prints it (engines in the deployment's order:
    the engine hands maps back with their keys sorted)."""
    found: dict[str, Any] = {}
    placed: dict[str, list[Replica]] = {}
    for replica in placement.replicas:  # one pass: `replicas_of` per deployment is quadratic in the fleet
        placed.setdefault(replica.deployment, []).append(replica)
    for key, status in placement.deployments.items():
        deployment = present(workloads.deployment(key), f"{key}, in the placement, is one of the workloads it was "
                                                        "computed from")
        order = [engine.name for engine in deployment.spec.engines]
        replicas = [replica.model_copy(update={"engines": {name: replica.engines[name] for name in order}})
                    for replica in placed.get(key, ())]
        found[key] = {"scheduled": f"{status.scheduled}/{status.desired}", "replicas": [replica_text(r) for r in replicas]}
    return found
