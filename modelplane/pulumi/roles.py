"""Stacks by role: one stack for the whole fleet (the default), or a fleet stack and one workload stack per cluster.

Stack config `modelplane:role` (docs/pulumi.md, "Splitting the fleet"):
- `single` (default): `Modelplane` holds everything, as before.
- `fleet`: `Modelplane` with `split` provisions the clusters, runs the placement and the fleet gateway
  and exports, per fleet cluster, `workloadStack-<cluster>` (plain data, `workload_stacks`: its replicas
  as one JSON text, `replicas_text`, the draining marker, whether its serving stack is installed, the serving-stack settings and, as one
  JSON text, the objects its render needs, `compose.share.cluster_share`) and `workloadSecrets-<cluster>`
  (a secret: its kubeconfig and the Secret values). One output per cluster, each holding only its
  share, keeps every property value small: the engine carries and diffs the outputs of a
  nothing-changed preview too, and a workload stack converts only its own output. It
  reads the workload stacks `modelplane:clusterStacks` names (`{cluster: stack}`; `stack_outputs`,
  what a StackReference reads, kept out of the state): their `applied` replicas (make-before-break, `scheduling.handoff`) and
  `gatewayAddress` (the fleet gateway routes to a cluster only once its stack reports it, and is
  itself registered on a workload cluster only once that cluster's stack reports it: `gateway_waits`).
  Reading a stack that does not exist fails the run, so a cluster is enrolled there once its stack exists.
- `cluster` (with `modelplane:cluster` and `modelplane:fleetStack`): `workload_stack` reads its two
  outputs of the fleet stack and deploys only that cluster's serving stack, replicas, caches and routes, rendered
  by compose from the same objects with the cluster's share of the placement (the same manifests as
  the single stack renders there); it exports `applied` (the replicas it runs, as `replicas_text`,
  resolved once every object is applied) and `gatewayAddress`. Its resources are registered at the stack's root with the
  single stack's logical names, so `pulumi state move` carries an existing stack's resources over
  without recreating them.
Safety: a cluster the fleet stack no longer exports is an error in its workload stack (never an empty
stack that deletes everything), so is a fleet stack whose outputs have the layout of an earlier version
(one `workloadStacks` output: run the fleet stack first), and the fleet stack refuses to drop a cluster whose stack still runs
replicas (`Handoff.stranded`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, fields, replace
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from modelplane.api import CONTROL_CLUSTER, ManifestErrors, Manifests, dump_objects, load_objects
from modelplane.compose import Rendered, Settings, address_placeholder, render, secret_placeholder
from modelplane.compose.secrets import SecretKey
from modelplane.compose.share import cluster_share
from modelplane.pulumi.clusters import CLOUD_MODULES
from modelplane.pulumi.gateway import InferenceGateway
from modelplane.invariants import present
from modelplane.pulumi.names import provider_identifier, scope, serving_name
from modelplane.pulumi.placement import from_wire, json_text, objects_text, parsed_objects, read_json_text
from modelplane.pulumi.serving import ServingStack
from modelplane.pulumi.stack_outputs import own_stack, read_outputs
from modelplane.pulumi.workloads import Target, register_placed
from modelplane.scheduling import Placement, StateError
from modelplane.scheduling.handoff import Handoff, handoff
from modelplane.scheduling.placement import PLACEMENT_VERSION, Replica

NAMESPACE = "modelplane"
COMPONENT = "modelplane"
"""The name of the `Modelplane` component the program builds: the first part of every logical name."""
ROLES = ("single", "fleet", "cluster")
SHARE, SECRETS = "workloadStack-", "workloadSecrets-"
"""The prefixes of the fleet stack's outputs for one cluster: `workloadStack-<cluster>` and
`workloadSecrets-<cluster>`."""
LEGACY = "workloadStacks"
"""The one output of every cluster's share that fleet stacks of an earlier version exported."""


@dataclass(frozen=True)
class ClusterReport:
    """What an enrolled cluster's workload stack reports to the fleet stack (its outputs)."""

    stack: str | None
    """None: a cluster not enrolled, known only by the address this stack exported last."""
    applied: Any
    """The replicas (placement documents' `replicas` entries) it runs; None before its first `up`."""
    gateway_address: Any
    """Its inference Gateway's address; None before its first `up`."""


def stack_role(config: pulumi.Config) -> str:
    role = config.get("role") or ROLES[0]
    if role not in ROLES:
        raise pulumi.RunError(f"modelplane:role is {role!r}; use {', '.join(ROLES)} (the default: single)")
    return role


def stack_outputs(stack: str) -> dict[str, Any]:
    """Another stack's outputs (`stack_outputs.read_outputs`) as plain data; secret outputs come back as
    plain values, which the caller wraps as secrets."""
    return from_wire(read_outputs(stack))


def cluster_reports(config: pulumi.Config, clusters: Sequence[str]) -> dict[str, ClusterReport]:
    """`modelplane:clusterStacks` (`{cluster: stack}`) -> what each of those stacks reports. A fleet cluster
    whose stack reports no gateway address (not enrolled, or not run since) keeps the address this
    stack exported last (`last_addresses`): its routes and the fleet gateway stay while a stack is
    moved, re-created or not enrolled yet, e.g. the first run after moving a single stack to the split
    layout, whose `gatewayAddresses` output already holds every cluster's."""
    stacks = config.get_object("clusterStacks") or {}
    if not isinstance(stacks, Mapping) or not all(isinstance(v, str) and v for v in stacks.values()):
        raise pulumi.RunError("modelplane:clusterStacks must map a cluster's name -> its workload stack, e.g. "
                              "pulumi config set --path 'modelplane:clusterStacks.east' organization/modelplane/east")
    found = {}
    for cluster, stack in sorted(stacks.items()):
        outputs = stack_outputs(stack)
        found[cluster] = ClusterReport(stack, outputs.get("applied"), outputs.get("gatewayAddress"))
    if all(cluster in found and found[cluster].gateway_address for cluster in clusters):
        return found  # every cluster's stack reports its address: this stack's last outputs are not needed
    last = last_addresses(clusters)
    found = {cluster: report if report.gateway_address else replace(report, gateway_address=last.get(cluster))
             for cluster, report in found.items()}
    return found | {cluster: ClusterReport(None, None, address) for cluster, address in sorted(last.items())
                    if cluster not in found}


def last_addresses(clusters: Sequence[str]) -> dict[str, str]:
    """Cluster -> its inference Gateway's address as this stack's last run exported it (`gatewayAddresses`,
    read back like any stack's outputs), for the fleet's `clusters` only; entries that are not a
    non-empty string are left out (read back, never trusted)."""
    value = from_wire(read_outputs(own_stack()).get("gatewayAddresses"))
    if not isinstance(value, Mapping):
        return {}
    return {cluster: address for cluster, address in sorted(value.items())
            if cluster in clusters and isinstance(address, str) and address}


def fleet_handoff(placement: Placement, manifests: Manifests, reports: Mapping[str, ClusterReport]) -> Handoff:
    """`handoff` from what the workload stacks report; a stranded cluster stops the run."""
    applied = {cluster: _replicas(report.stack, report.applied) for cluster, report in reports.items()}
    handed = handoff(placement, [c.name for c in manifests.fleet.clusters], applied)
    if handed.stranded:
        lines = [f"{cluster} (stack {reports[cluster].stack}): {len(replicas)} replica(s) still run there"
                 for cluster, replicas in handed.stranded.items()]
        raise pulumi.RunError(
            "clusters removed from the manifests still run replicas, and removing the cluster would take them "
            "down before their replacements run:\n" + "\n".join(lines) + "\nPut the cluster back and taint it "
            "(`NoExecute`) so its replicas move make-before-break; once its stack reports none, remove it, "
            "`pulumi destroy` its workload stack and drop it from modelplane:clusterStacks.")
    return handed


def _replicas(stack: str | None, value: Any) -> list[Any] | None:
    """A workload stack's `applied` output: the JSON text of its replicas (`replicas_text`), or the list
    itself as stacks of an earlier version exported it."""
    if value is None:
        return None
    try:
        return list(read_replicas(value))
    except StateError as error:
        raise pulumi.RunError(f"workload stack {stack}: its `applied` output is not a list of replicas ({error}); "
                              "run `pulumi up` on that stack") from None


def gateway_waits(host: str, reports: Mapping[str, ClusterReport] | None, resource: pulumi.Resource) -> bool:
    """True (and a warning) when the fleet stack leaves the fleet gateway out this run: it runs on a
    workload cluster whose stack has not reported its gateway address yet, so that cluster's serving
    stack (the gateway's namespace, class and backend) is not known to be there. Never in one stack,
    nor on the control cluster (the fleet stack holds its serving stack)."""
    if reports is None or host == CONTROL_CLUSTER or (host in reports and reports[host].gateway_address):
        return False
    pulumi.log.warn(f"the fleet gateway on {host} waits for {host}'s workload stack: run it, then enroll it in "
                    "modelplane:clusterStacks (its serving stack holds the gateway's namespace and class)", resource)
    return True


def register_routes(component: str, rendered: Rendered, targets: Mapping[str, Target], reports: Mapping[str, ClusterReport],
                    gateway: InferenceGateway | None, secrets: Mapping[str, pulumi.Input[str]],
                    parent: pulumi.Resource, skip_await: bool) -> dict[str, pulumi.CustomResource]:
    """The fleet gateway's objects of the split layout: those that reach a cluster's inference Gateway
    only once that cluster's stack reports its address (a warning names the others)."""
    addresses = {cluster: report.gateway_address for cluster, report in reports.items() if report.gateway_address}
    # `addons` has an entry per fleet cluster (and the control cluster's); `clusters` none: this stack renders no cluster.
    waiting = sorted(cluster for cluster in rendered.addons if cluster != CONTROL_CLUSTER and cluster not in addresses)
    kept = tuple(m for m in rendered.gateway if not any(address_placeholder(c) in repr(m) for c in waiting))
    if len(kept) < len(rendered.gateway):
        pulumi.log.warn(f"the fleet gateway does not route to {', '.join(waiting)} yet: "
                        "the cluster's workload stack has not reported its gateway address "
                        "(enroll it in modelplane:clusterStacks once its stack has run)", parent)
    return register_placed(component, replace(rendered, clusters={}, gateway=kept), targets, addresses, gateway,
                           secrets, parent, skip_await)


def replicas_text(replicas: Sequence[Replica]) -> str:
    """Replicas as one JSON text (the placement document's `replicas` entries): one output value, not
    about 26 per replica for the engine to carry and diff."""
    return json_text(Placement(replicas=tuple(replicas)).to_json()["replicas"])


def read_replicas(value: Any) -> tuple[Replica, ...]:
    """`replicas_text`'s replicas, validated; a list (an earlier version's form) is read as it is. A
    `StateError` says what is wrong."""
    return Placement.from_json({"version": PLACEMENT_VERSION, "replicas": read_json_text(value, "replicas")}).replicas


def workload_stacks(manifests: Manifests, handed: Handoff, settings: Settings, skip_await: bool,
                    installed_on: frozenset[str], secret_keys: Sequence[SecretKey]) -> dict[str, dict[str, Any]]:
    """Cluster -> its `workloadStack-<cluster>` output: what its workload stack deploys (plain data; the
    objects as one JSON text, only those its render needs)."""
    shared = {"settings": asdict(settings), "skipAwait": skip_await, "secrets": [list(key) for key in sorted(secret_keys)]}
    found = {}
    for cluster, replicas in handed.running.items():
        share = cluster_share(manifests, cluster, {replica.deployment for replica in replicas})
        found[cluster] = {"installPrerequisites": cluster in installed_on,
                          "replicas": replicas_text(replicas),
                          "draining": [f"{r.deployment}#{r.index}" for r in handed.draining.get(cluster, ())],
                          **shared, "objects": objects_text(dump_objects(share))}
    return found


def workload_stack(cluster: str, fleet_stack: str) -> pulumi.Output[dict[str, Any]]:
    """The workload stack of `cluster`: its serving stack and share of the fleet, read from its outputs
    of the fleet stack (`read_outputs`: known in a preview too); resolves to `{"applied": [...],
    "gatewayAddress": ...}` once everything is applied."""
    outputs = read_outputs(fleet_stack)
    entry = from_wire(_entry(outputs, SHARE, cluster, fleet_stack))
    private = from_wire(_entry(outputs, SECRETS, cluster, fleet_stack))
    if not isinstance(private.get("kubeconfig"), str) or not isinstance(private.get("secrets"), Mapping):
        raise pulumi.RunError(f"fleet stack {fleet_stack}: its output {SECRETS}{cluster} lacks the kubeconfig or the "
                              "Secret values; run `pulumi up` on the fleet stack. This run changes nothing.")
    manifests = _manifests(entry["objects"], fleet_stack)
    provider = k8s.Provider(provider_name(manifests, cluster), kubeconfig=pulumi.Output.secret(private["kubeconfig"]),
                            cluster_identifier=provider_identifier(cluster))
    settings = Settings(**{f.name: entry["settings"][f.name] for f in fields(Settings) if f.name in entry["settings"]})
    try:
        placement = Placement(replicas=read_replicas(entry.get("replicas")))
    except StateError as error:
        raise pulumi.RunError(f"fleet stack {fleet_stack}: its output {SHARE}{cluster} holds no readable replicas "
                              f"({error}); run `pulumi up` on the fleet stack. This run changes nothing.") from None
    keys: list[SecretKey] = [(namespace, name, key) for namespace, name, key in entry["secrets"]]
    rendered = render(manifests, placement, settings, secrets=keys)
    skip_await = bool(entry["skipAwait"])
    serving = ServingStack(serving_name(COMPONENT, cluster), {
        "cluster": cluster, "addons": rendered.addons[cluster], "provider": provider,
        "install_prerequisites": bool(entry["installPrerequisites"]), "skip_await": skip_await})
    secrets = {secret_placeholder(*key): pulumi.Output.secret(private["secrets"][secret_placeholder(*key)])
               for key in keys}
    address = present(serving.gateway_address, "a workload cluster's serving stack holds its inference Gateway")
    created = register_placed(COMPONENT, replace(rendered, clusters={cluster: rendered.clusters[cluster]}, gateway=()),
                              {cluster: Target(provider, serving, None)}, {cluster: address}, None, secrets, None,
                              skip_await)
    done = pulumi.Output.all(serving.urn, *(resource.urn for resource in created.values()))
    return pulumi.Output.all(applied=done.apply(lambda _: entry["replicas"]), gatewayAddress=serving.gateway_address)


def provider_name(manifests: Manifests, cluster: str) -> str:
    """The single stack's name for the cluster's kubernetes provider (`modelplane:<cluster>-<module>-k8s`,
    the cloud module's component plus `-k8s`): a resource whose provider changes is replaced, so a workload
    stack that took over the single stack's resources (`pulumi state move`) must keep it."""
    manifest = present(manifests.fleet.cluster(cluster), "the fleet stack exports only clusters of its manifests")
    return f"{scope(COMPONENT, cluster)}-{CLOUD_MODULES[manifest.spec.cluster.source]}-k8s"


def _entry(outputs: Mapping[str, Any], prefix: str, cluster: str, fleet_stack: str) -> Mapping[str, Any]:
    """The fleet stack's output `<prefix><cluster>` (as read, wire values), or an error: never an empty
    stack that deletes everything."""
    entry = outputs.get(prefix + cluster)
    if isinstance(entry, Mapping):
        return entry
    if entry is not None:
        raise pulumi.RunError(f"fleet stack {fleet_stack}: its output {prefix}{cluster} is not a map; run `pulumi up` "
                              "on the fleet stack. This run changes nothing.")
    if LEGACY in outputs:
        raise pulumi.RunError(
            f"fleet stack {fleet_stack} exports the layout of an earlier modelplane version (one `{LEGACY}` output, "
            f"no `{prefix}{cluster}`): run `pulumi up` on the fleet stack first, then this stack. This run changes "
            "nothing.")
    exported = sorted(name.removeprefix(prefix) for name in outputs if name.startswith(prefix))
    if not exported:
        raise pulumi.RunError(f"fleet stack {fleet_stack} exports no workload stacks: run `pulumi up` on it with "
                              "modelplane:role fleet first. This run changes nothing.")
    raise pulumi.RunError(
        f"fleet stack {fleet_stack} exports nothing for cluster {cluster!r} (it exports {', '.join(exported)}): "
        "the cluster was removed from the fleet, or modelplane:cluster is misspelt. A removed cluster's workload "
        "stack is destroyed with `pulumi destroy`; this run changes nothing.")


def _manifests(text: Any, fleet_stack: str) -> Manifests:
    objects = parsed_objects(text)
    if objects is None:
        raise pulumi.RunError(f"fleet stack {fleet_stack}: the objects it exports are not the JSON text of a list; run "
                              "`pulumi up` on the fleet stack. This run changes nothing.")
    try:
        return load_objects(objects, source=f"fleet stack {fleet_stack}", control_cluster=True)
    except ManifestErrors as errors:
        raise pulumi.RunError(f"fleet stack {fleet_stack} exports objects that do not load:\n"
                              + "\n".join(str(problem) for problem in errors.errors)) from None

