"""Rendered Kubernetes manifests -> Pulumi resources, and the placeholders compose leaves in them.

`kubernetes_object(name, manifest, opts)` is the one place a manifest dict becomes a resource:
- a built-in kind gets its typed `pulumi_kubernetes` class (`TYPED`); its top-level fields map
  onto the class's arguments (`FIELDS`), and nested dicts keep the camelCase the API uses;
- a Gateway API `Gateway` gets `GatewayObject`, a custom resource whose `status` is an output (its
  address) and whose `pulumi.com/waitFor` annotation makes Pulumi wait until the address is set;
- any other custom kind (LeaderWorkerSet, InferencePool, HTTPRoute, Backend, GatewayClass) is an
  `apiextensions.CustomResource`.
A built-in kind missing from `TYPED` is a programming error (an assert), never a silent fallback.
With `skip_await=True` the object carries `pulumi.com/skipAwait: "true"`, so Pulumi does not wait
for it to become ready (no kubelets, or a fleet that should not block `up` on model downloads);
a Gateway always waits, because its address is data the fleet routes need, not readiness, unless
its address is given (`GatewayObject(..., address=...)`, stack config `gatewayAddresses`: no
controller on the cluster writes one, or it is fixed outside): then it does not wait, and that
address is its `address()`.

`substitute(value, replacements)` replaces placeholder strings (a cluster's gateway address)
wherever they appear in leaf strings, whole or inside a URL, by the Outputs that stand for them.
Secret values never go through it (`workloads._with_secret_values` fills in exactly one field).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import pulumi
import pulumi_kubernetes as k8s
from pulumi import ResourceOptions
from modelplane.invariants import InvariantError

TYPED: dict[tuple[str, str], Callable[..., pulumi.CustomResource]] = {
    ("v1", "Namespace"): k8s.core.v1.Namespace,
    ("v1", "Secret"): k8s.core.v1.Secret,
    ("v1", "ServiceAccount"): k8s.core.v1.ServiceAccount,
    ("v1", "ConfigMap"): k8s.core.v1.ConfigMap,
    ("v1", "PersistentVolumeClaim"): k8s.core.v1.PersistentVolumeClaim,
    ("v1", "Service"): k8s.core.v1.Service,
    ("discovery.k8s.io/v1", "EndpointSlice"): k8s.discovery.v1.EndpointSlice,
    ("rbac.authorization.k8s.io/v1", "Role"): k8s.rbac.v1.Role,
    ("rbac.authorization.k8s.io/v1", "RoleBinding"): k8s.rbac.v1.RoleBinding,
    ("rbac.authorization.k8s.io/v1", "ClusterRole"): k8s.rbac.v1.ClusterRole,
    ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding"): k8s.rbac.v1.ClusterRoleBinding,
    ("apiextensions.k8s.io/v1", "CustomResourceDefinition"): k8s.apiextensions.v1.CustomResourceDefinition,
    ("batch/v1", "Job"): k8s.batch.v1.Job,
    ("apps/v1", "Deployment"): k8s.apps.v1.Deployment,
    ("resource.k8s.io/v1", "ResourceClaimTemplate"): k8s.resource.v1.ResourceClaimTemplate,
    ("networking.k8s.io/v1", "NetworkPolicy"): k8s.networking.v1.NetworkPolicy,
}
FIELDS = {"metadata": "metadata", "spec": "spec", "data": "data", "stringData": "string_data",
          "binaryData": "binary_data", "type": "type", "immutable": "immutable", "rules": "rules",
          "roleRef": "role_ref", "subjects": "subjects", "secrets": "secrets",
          "imagePullSecrets": "image_pull_secrets", "automountServiceAccountToken": "automount_service_account_token",
          "addressType": "address_type", "endpoints": "endpoints", "ports": "ports"}
"""Top-level manifest fields -> typed-class arguments."""
BUILT_IN_GROUPS = frozenset({"", "apps", "batch", "discovery.k8s.io", "rbac.authorization.k8s.io", "resource.k8s.io",
                             "storage.k8s.io", "policy", "networking.k8s.io", "scheduling.k8s.io", "autoscaling",
                             "apiextensions.k8s.io"})
GATEWAY_API = "gateway.networking.k8s.io/v1"
WAIT_FOR_ADDRESS = {"pulumi.com/waitFor": "jsonpath={.status.addresses[0].value}"}
SKIP_AWAIT = {"pulumi.com/skipAwait": "true"}


class GatewayObject(pulumi.CustomResource):
    """A Gateway API Gateway; unlike `apiextensions.CustomResource`, its `status` is an output."""

    status: pulumi.Output[dict[str, Any]]
    """The Gateway's status; `status.addresses[0].value` is its external address."""

    def __init__(self, name: str, manifest: Mapping[str, Any], opts: ResourceOptions | None = None,
                 address: str | None = None):
        self._given = address
        metadata = dict(manifest["metadata"])
        metadata["annotations"] = {**metadata.get("annotations", {}),
                                   **(WAIT_FOR_ADDRESS if address is None else SKIP_AWAIT)}
        props = {"apiVersion": manifest["apiVersion"], "kind": manifest["kind"], "metadata": metadata,
                 "spec": manifest["spec"], "status": None}
        super().__init__(f"kubernetes:{manifest['apiVersion']}:{manifest['kind']}", name, props, opts)

    def address(self) -> pulumi.Output[str]:
        """The first address the Gateway's controller assigned (an IP or a host name), or the given one."""
        if self._given is not None:
            return pulumi.Output.from_input(self._given)
        return self.status.apply(lambda status: status["addresses"][0]["value"])


def kubernetes_object(name: str, manifest: Mapping[str, Any], opts: ResourceOptions,
                      skip_await: bool = False, address: str | None = None) -> pulumi.CustomResource:
    """The resource for one rendered manifest (see the module docstring for which class and when it
    waits)."""
    api_version, kind = manifest["apiVersion"], manifest["kind"]
    if (api_version, kind) == (GATEWAY_API, "Gateway"):
        _only_spec(name, manifest)
        return GatewayObject(name, manifest, opts, address)
    if skip_await:
        metadata = manifest["metadata"]
        manifest = {**manifest, "metadata": {**metadata, "annotations": {**metadata.get("annotations", {}),
                                                                         **SKIP_AWAIT}}}
    typed = TYPED.get((api_version, kind))
    if typed is not None:
        unknown = sorted(set(manifest) - {"apiVersion", "kind", *FIELDS})
        if unknown:
            raise InvariantError(f"{name}: {api_version} {kind} has top-level fields the Pulumi layer does not map: "
                                 f"{unknown}")
        fields = {FIELDS[key]: value for key, value in manifest.items() if key in FIELDS}
        return typed(name, opts=opts, **fields)
    group = api_version.rpartition("/")[0]
    if group in BUILT_IN_GROUPS:
        raise InvariantError(f"{name}: built-in kind {api_version} {kind} is missing from TYPED")
    _only_spec(name, manifest)
    return k8s.apiextensions.CustomResource(name, api_version=api_version, kind=kind, metadata=manifest["metadata"],
                                            spec=manifest.get("spec"), opts=opts)


def _only_spec(name: str, manifest: Mapping[str, Any]) -> None:
    """A custom resource is registered from its metadata and spec alone: anything else would be lost."""
    extra = sorted(set(manifest) - {"apiVersion", "kind", "metadata", "spec"})
    if extra:
        raise InvariantError(f"{name}: {manifest['kind']} carries fields besides spec, which would be lost: {extra}")


def substitute(value: Any, replacements: Mapping[str, pulumi.Input[str]]) -> Any:
    """`value` with every placeholder in its leaf strings replaced by its Output."""
    if isinstance(value, str):
        found = sorted(key for key in replacements if key in value)
        if not found:
            return value
        return pulumi.Output.all(*(replacements[key] for key in found)).apply(
            lambda resolved: _replace(value, dict(zip(found, resolved, strict=True))))
    if isinstance(value, Mapping):
        return {key: substitute(item, replacements) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [substitute(item, replacements) for item in value]
    return value


def _replace(text: str, resolved: Mapping[str, str]) -> str:
    for placeholder, actual in resolved.items():
        text = text.replace(placeholder, actual)
    return text
