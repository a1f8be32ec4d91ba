"""The loader's cross-field rules that fit in a CRD: CEL `x-kubernetes-validations`, and schema keywords.

Each entry restates a validator of `modelplane.api` (named in the comment beside it) so an API server
refuses such an object at `kubectl apply` (the syntax of parsed strings is a `pattern`:
`base.checked_string`). The loader stays the authority: what cannot be said here (CEL selectors that
compile, map keys, reserved labels, references across objects; tests/api/test_crd_coverage.py lists
them) is checked when the program reads the objects, and an object the server accepted but the loader
refuses is held at its last accepted version (control-cluster mode: `api.served`).

Rules are written against the defaulted object (the API server applies schema defaults before it
validates), stay within its cost budget (every list they walk is bounded, every string they match
has a maximum length) and say what is wrong in the loader's words.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from modelplane.api.clouds import ClusterSpec, ExistingCluster, Provisioning
from modelplane.api.fleet import (
    Attribute,
    ClassDevice,
    ClusterGateway,
    Fabric,
    InferenceClassSpec,
    InferenceClusterSpec,
    NodePool,
)
from modelplane.api.gateway import InferenceGatewaySpec, Traefik
from modelplane.api.workload import (
    Container,
    Engine,
    EnvVar,
    EnvVarSource,
    Member,
    ModelDeploymentSpec,
    NodeSelector,
    ServiceEndpoint,
    Toleration,
)


@dataclass(frozen=True)
class Rule:
    """One `x-kubernetes-validations` entry: a CEL expression over `self`, true when the object is valid."""

    rule: str
    message: str
    field_path: str | None = None
    """Where the API server reports a violation (`.deviceClassName`), relative to the object."""

    def to_schema(self) -> dict[str, str]:
        entry = {"rule": self.rule, "message": self.message}
        if self.field_path:
            entry["fieldPath"] = self.field_path
        return entry


def _selects_block(selector: str, value: str, block: str) -> Rule:
    """`source: GKE` takes the `gke` block and no other (`clouds.only_the_chosen_block`)."""
    return Rule(f"has(self.{block}) == (self.{selector} == '{value}')",
                f"the {block} block is set exactly when {selector} is {value}", f".{block}")


RULES: dict[type[BaseModel], tuple[Rule, ...]] = {
    ClassDevice: (  # ClassDevice._dra_needs_device_class
        Rule("self.claim != 'DRA' || has(self.deviceClassName)",
             "deviceClassName is required when claim is DRA: it names the DRA DeviceClass the pods claim this "
             "device through", ".deviceClassName"),),
    Fabric: (  # Fabric._infiniband_only_for_infiniband
        Rule("!has(self.infiniband) || self.type == 'InfiniBand'", "infiniband is only allowed when type is InfiniBand",
             ".infiniband"),),
    NodePool: (  # NodePool._counts_ordered
        Rule("!has(self.minNodeCount) || !has(self.maxNodeCount) || self.minNodeCount <= self.maxNodeCount",
             "minNodeCount is above maxNodeCount", ".minNodeCount"),
        Rule("!has(self.maxNodeCount) || self.nodeCount <= self.maxNodeCount", "nodeCount is above maxNodeCount",
             ".nodeCount"),
        Rule("!has(self.minNodeCount) || self.nodeCount >= self.minNodeCount", "nodeCount is below minNodeCount",
             ".nodeCount")),
    InferenceClusterSpec: (  # InferenceClusterSpec._pools_fit_the_cloud
        Rule("self.cluster.source != 'AKS' || self.nodePools.all(p, p.name.matches('^[a-z][a-z0-9]{0,11}$'))",
             "AKS names node pools with 1-12 lowercase letters and digits, starting with a letter", ".nodePools"),
        Rule("self.cluster.source == 'EKS' || self.nodePools.all(p, !has(p.capacityBlock))",
             "capacityBlock is for EKS clusters (EC2 Capacity Blocks for ML)", ".nodePools"),
        Rule("self.nodePools.all(p, !has(p.capacityBlock) || (has(p.zones) && size(p.zones) == 1))",
             "a Capacity Block is reserved in one Availability Zone: list that zone, and only it, in zones",
             ".nodePools"),
        Rule("self.cluster.source != 'Nebius' || self.nodePools.all(p, p.fabric.type != 'InfiniBand' || "
             "has(p.fabric.infiniband))",
             "infiniband.fabric is required when fabric.type is InfiniBand on Nebius", ".nodePools"),
        # not a loader rule: a transition rule the API server alone can check (docs/dynamo.md)
        Rule("!has(oldSelf.stack) || self.stack == oldSelf.stack",
             "stack is immutable once set: a cluster's gangs would all be replaced (LeaderWorkerSet <-> Grove "
             "PodCliqueSet); create a new InferenceCluster with the other stack and move the deployments to it",
             ".stack")),
    ClusterSpec: tuple(_selects_block("source", value, block) for value, block in (  # ClusterSpec._block_matches_source
        ("GKE", "gke"), ("EKS", "eks"), ("AKS", "aks"), ("Nebius", "nebius"), ("Vultr", "vultr"),
        ("Existing", "existing"))),
    Provisioning: tuple(_selects_block("provider", value, block) for value, block in (  # Provisioning._block_matches_provider
        ("GKE", "gke"), ("EKS", "eks"), ("AKS", "aks"), ("Nebius", "nebius"), ("Vultr", "vultr"))),
    ExistingCluster: (  # ExistingCluster._one_kubeconfig_and_one_storage_class
        Rule("has(self.kubeconfig) != has(self.secretRef)",
             "set kubeconfig (a Pulumi secret config key) or secretRef (a Secret): exactly one of them"),
        Rule("!has(self.storageClassName) || !has(self.cache) || !has(self.cache.storageClassName)",
             "set storageClassName or cache.storageClassName, not both", ".cache")),
    Traefik: (  # Traefik._metallb_with_its_load_balancer
        Rule("has(self.metallb) == (has(self.loadBalancer) && self.loadBalancer == 'MetalLB')",
             "metallb.addressPool is set exactly when loadBalancer is MetalLB", ".metallb"),),
    ClusterGateway: (  # ClusterGateway._open_or_authenticated
        Rule("!has(self.auth) || !self.publicInference", "auth contradicts publicInference: true", ".auth"),),
    InferenceGatewaySpec: (  # InferenceGatewaySpec._traefik_with_its_backend, _secure_unless_plain_http
        Rule("!has(self.traefik) || self.backend == 'Traefik'", "traefik is only allowed when backend is Traefik",
             ".traefik"),
        Rule("!has(self.auth) || self.backend == 'EnvoyGateway'", "API keys need backend EnvoyGateway", ".auth"),
        Rule("has(self.tls) != self.plainHTTP", "tls is required unless plainHTTP is true, and contradicts it",
             ".tls"),
        Rule("has(self.clusterTLS) != self.plainHTTP",
             "clusterTLS is required unless plainHTTP is true, and contradicts it", ".clusterTLS"),
        Rule("!has(self.tls) || !has(self.tls.certManager) || has(self.hostname)",
             "hostname is required with tls.certManager", ".hostname")),
    ModelDeploymentSpec: (  # ModelDeploymentSpec._phases_follow_mode
        Rule("self.serving.mode != 'PrefillDecode' || (size(self.engines) == 2 && "
             "self.engines.exists(e, has(e.phase) && e.phase == 'Prefill') && "
             "self.engines.exists(e, has(e.phase) && e.phase == 'Decode'))",
             "serving.mode PrefillDecode needs exactly two engines, one with phase: Prefill and one with phase: Decode",
             ".engines"),
        Rule("self.serving.mode == 'PrefillDecode' || self.engines.all(e, !has(e.phase))",
             "phase may only be set when serving.mode is PrefillDecode", ".engines")),
    Engine: (  # Engine._shape
        Rule("size(self.members) == 1 ? self.members[0].role == 'Standalone' : "
             "(self.members.exists(m, m.role == 'Leader') && self.members.exists(m, m.role == 'Worker'))",
             "an engine is exactly one Standalone member, or one Leader and one Worker", ".members"),
        Rule("self.members.exists(m, has(m.nodeSelector))",
             "at least one member of an engine must carry a nodeSelector requesting devices (a GPU request is the "
             "only path to a GPU)", ".members")),
    Member: (  # Engine._shape: worker only on a Worker
        Rule("!has(self.worker) || self.role == 'Worker'", "worker may only be set on a Worker member", ".worker"),),
    Toleration: (  # Toleration._operator_fields
        Rule("self.operator != 'Equal' || (has(self.key) && self.key != '')",
             "an Equal toleration must set a key (use operator: Exists with no key to tolerate every taint)", ".key"),
        Rule("self.operator != 'Exists' || !has(self.value)", "an Exists toleration must not set a value", ".value")),
    EnvVar: (  # EnvVar._value_or_source
        Rule("!has(self.value) || !has(self.valueFrom)", "set value or valueFrom, not both", ".valueFrom"),),
    Container: (  # Container._named_engine
        Rule("self.name == 'engine'", "the single container must be named 'engine' (the inference engine)", ".name"),),
    ServiceEndpoint: (  # ServiceEndpoint._selects_something
        Rule("has(self.selector.matchLabels) && size(self.selector.matchLabels) > 0",
             "matchLabels must name at least one label (e.g. modelplane.ai/deployment: <deployment>)",
             ".selector.matchLabels"),),
}
"""Rules per model: every object schema generated from the model carries them."""

EXACTLY_ONE_FIELD: dict[str, Any] = {"minProperties": 1, "maxProperties": 1}
KEYWORDS: dict[type[BaseModel], dict[str, Any]] = {
    Attribute: EXACTLY_ONE_FIELD,  # Attribute._exactly_one
    EnvVarSource: EXACTLY_ONE_FIELD,  # EnvVarSource._exactly_one
}
"""Schema keywords per model (the rules that need no CEL)."""

LIST_MAP_KEYS: dict[tuple[type[BaseModel], str], tuple[str, ...]] = {
    (InferenceClassSpec, "devices"): ("name",),  # InferenceClassSpec._unique_devices
    (InferenceClusterSpec, "nodePools"): ("name",),  # InferenceClusterSpec._unique_pools
    (InferenceClusterSpec, "taints"): ("key", "effect"),  # InferenceClusterSpec._unique_taints
    (NodeSelector, "devices"): ("name",),  # NodeSelector._unique_requests
    (ModelDeploymentSpec, "engines"): ("name",),  # ModelDeploymentSpec._unique_engines
}
"""Lists whose items are unique by these keys (`x-kubernetes-list-type: map`): the API server refuses a
duplicate, and server-side apply merges the list item by item."""
