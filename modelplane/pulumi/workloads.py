"""Per-cluster resources from the known placement: the one function that registers them.

`register_placed(rendered, targets, ...)` turns compose's output into resources:
- every manifest of `rendered.clusters[c]` on cluster c, and every fleet-gateway object except the
  fleet Gateway itself (the InferenceGateway component owns it) on the gateway's cluster;
- each one with its cluster's provider, depending on that cluster's serving stack (the CRDs and
  controllers it needs) and on the Namespace it lives in, `deleted_with` the cluster, and named by
  `names.manifest_name` (cluster first), so a moved replica previews as creates plus deletes;
- a cluster's gateway address replaces compose's placeholder wherever it stands (`substitute`);
  a secret's value is filled in only as the `stringData` value of the one key of the one Secret
  compose generated for it (`_with_secret_values`: same namespace, name and key), never into any
  other object or field, so no manifest can have another namespace's secret copied into its own;
  a fleet gateway object aimed at a cluster's gateway (an Envoy Gateway Backend, a Traefik
  EndpointSlice) gets the address in the form its kind needs once it is known, by compose's own
  rule (`compose.bind_addresses`). A Secret whose value is not
  configured is not managed (a warning says which config key to set);
- with `skip_await`, none of them waits for readiness (`kube.kubernetes_object`).

It runs inside the placement Output's `apply`: the single, deliberate exception to "no resources
in apply". The placement is known at preview (the engine returns the dynamic resource's checked
inputs as outputs), and `placement.known_placement` fails the run when it is not, so these
resources always show in `pulumi preview` and are never silently dropped.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_kubernetes as k8s
from pulumi import ResourceOptions

from modelplane.compose import FLEET_GATEWAY, Rendered, address_placeholder, bind_addresses, secret_placeholder
from modelplane.compose.names import MANAGED_BY, MODELPLANE
from modelplane.pulumi.gateway import InferenceGateway
from modelplane.pulumi.kube import kubernetes_object, substitute
from modelplane.pulumi.names import aliased, legacy_manifest_name, manifest_name, scope

SECRET_CONFIG = "modelplane:secrets.{namespace}.{name}.{key}"


@dataclass(frozen=True)
class Target:
    """Where a cluster's resources go."""

    provider: k8s.Provider
    after: pulumi.Resource
    """The cluster's serving stack."""
    anchor: pulumi.Resource | None
    """What the cluster's resources are `deleted_with`: the cloud cluster, or None for an existing one."""


def register_placed(component: str, rendered: Rendered, targets: Mapping[str, Target],
                    gateway_addresses: Mapping[str, pulumi.Input[str]], gateway: InferenceGateway | None,
                    secrets: Mapping[str, pulumi.Input[str]], parent: pulumi.Resource | None,
                    skip_await: bool = False) -> dict[str, pulumi.CustomResource]:
    """Register every rendered object, named `component:cluster:Kind:namespace/name`; returns them by
    logical name. `targets` needs an entry only for the clusters objects go to (`rendered.clusters`' and
    the fleet gateway's); `gateway_addresses` (cluster -> its inference Gateway's address) those the
    objects route to. `parent` None: at the stack's root (a workload stack of the split layout,
    `roles.workload_stack`)."""
    addresses = {address_placeholder(cluster): address for cluster, address in gateway_addresses.items()}
    batches: list[tuple[str, Sequence[dict], pulumi.Resource | None, list[pulumi.Resource]]] = [
        (cluster, manifests, parent, []) for cluster, manifests in rendered.clusters.items()]
    if gateway is not None:
        routes = [m for m in rendered.gateway if (m["kind"], m["metadata"]["name"]) != ("Gateway", FLEET_GATEWAY)]
        batches.append((gateway.cluster, routes, gateway, [gateway.gateway]))
    created: dict[str, pulumi.CustomResource] = {}
    namespaces: dict[tuple[str, str], pulumi.CustomResource] = {}
    for cluster, manifests, owner, first in batches:
        target = targets[cluster]
        for manifest in manifests:
            if _unconfigured_secret(cluster, manifest, secrets):
                continue
            namespace = namespaces.get((cluster, manifest["metadata"].get("namespace", "")))
            after = [target.after, *first, *([namespace] if namespace is not None else [])]
            name = manifest_name(scope(component, cluster), manifest)
            resolved = substitute(_bound(_with_secret_values(manifest, secrets), addresses), addresses)
            created[name] = kubernetes_object(name, resolved, aliased(ResourceOptions(
                parent=owner, provider=target.provider, depends_on=after, deleted_with=target.anchor),
                legacy_manifest_name(cluster, manifest)), skip_await)
            if manifest["kind"] == "Namespace":
                namespaces[(cluster, manifest["metadata"]["name"])] = created[name]
    return created


def _bound(manifest: dict, addresses: Mapping[str, pulumi.Output[str]]) -> Mapping[str, Any]:
    """A fleet gateway object that reaches a cluster's gateway, with each field that holds the
    address deferred until the address is known and bound by compose's own rule
    (`compose.bind_addresses`: an Envoy Backend endpoint is `ip` or `fqdn`, an EndpointSlice's
    addressType follows the address)."""
    found = sorted(placeholder for placeholder in addresses if placeholder in repr(manifest))
    if not found:
        return manifest
    bound = pulumi.Output.all(*(addresses[placeholder] for placeholder in found)).apply(
        lambda resolved: bind_addresses(manifest, dict(zip(found, resolved, strict=True))))
    return {key: value if key in ("apiVersion", "kind", "metadata") else bound.apply(lambda m, key=key: m[key])
            for key, value in manifest.items()}


def _with_secret_values(manifest: dict, secrets: Mapping[str, pulumi.Input[str]]) -> dict:
    """A Secret compose generated (managed by Modelplane) with each `stringData` value that is the
    placeholder of exactly its own namespace, name and key replaced by the configured value;
    any other manifest, field or value as it is."""
    metadata = manifest["metadata"]
    if manifest["kind"] != "Secret" or metadata.get("labels", {}).get(MANAGED_BY) != MODELPLANE:
        return manifest
    own = {key: secret_placeholder(metadata["namespace"], metadata["name"], key) for key in manifest.get("stringData", {})}
    return {**manifest, "stringData": {key: secrets[value] if value == own[key] and value in secrets else value
                                       for key, value in manifest["stringData"].items()}} if own else manifest


def _unconfigured_secret(cluster: str, manifest: Mapping[str, Any], secrets: Mapping[str, Any]) -> bool:
    """True (and a warning) for a Secret whose value compose left as a placeholder nobody configured."""
    if manifest["kind"] != "Secret":
        return False
    metadata = manifest["metadata"]
    missing = [key for key, value in manifest.get("stringData", {}).items()
               if value == secret_placeholder(metadata["namespace"], metadata["name"], key) and value not in secrets]
    if not missing:
        return False
    keys = ", ".join(SECRET_CONFIG.format(namespace=metadata["namespace"], name=metadata["name"], key=key)
                     for key in missing)
    pulumi.log.warn(f"Secret {metadata['namespace']}/{metadata['name']} on {cluster} is not managed: no value for "
                    f"{keys}; set it with `pulumi config set --secret --path '<key>' <value>` or create the "
                    "Secret on the cluster yourself")
    return True
