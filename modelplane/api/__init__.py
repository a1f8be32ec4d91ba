"""The `modelplane.ai/v1alpha1` API: typed models of every kind and the loader that validates them.

`load(paths)` reads manifests (files or directories, kubectl-style multi-document YAML) into one
immutable `Manifests` (the platform's `Fleet` and the ML teams' `Workloads`), or raises
`ManifestErrors` carrying every `Problem`. Pure apart from `load`'s file reading: no Pulumi, no
printing, no environment.
"""

from modelplane.api.base import (
    API_VERSION,
    CacheSource,
    Claim,
    ClusterSource,
    FabricType,
    LabelSelector,
    Phase,
    Provider,
    Role,
    ServingMode,
    TaintEffect,
    TolerationOperator,
)
from modelplane.api.fleet import (
    ClassDevice,
    ClusterGateway,
    InferenceClass,
    InferenceCluster,
    NodePool,
    ServingStack,
    Taint,
)
from modelplane.api.gateway import CONTROL_CLUSTER, CertManager, GatewayAuth, GatewayBackend, InferenceGateway, LoadBalancer
from modelplane.api.loader import dump_objects, load, load_objects, load_sources
from modelplane.api.manifests import Fleet, Manifests, Origin, Workloads
from modelplane.api.problems import ManifestErrors, Problem, Severity
from modelplane.api.workload import (
    DeviceRequest,
    Engine,
    Member,
    ModelCache,
    ModelDeployment,
    ModelEndpoint,
    ModelService,
    Toleration,
)

__all__ = [
    "API_VERSION", "CONTROL_CLUSTER", "CertManager", "CacheSource", "Claim", "ClassDevice", "ClusterGateway", "ClusterSource", "DeviceRequest", "Engine",
    "FabricType", "Fleet", "GatewayAuth", "GatewayBackend", "InferenceClass", "InferenceCluster", "InferenceGateway", "LabelSelector",
    "LoadBalancer", "ServingStack",
    "ManifestErrors", "Manifests", "Member", "ModelCache", "ModelDeployment", "ModelEndpoint", "ModelService",
    "NodePool", "Origin", "Phase", "Problem", "Provider", "Role", "ServingMode", "Severity", "Taint",
    "TaintEffect", "Toleration", "TolerationOperator", "Workloads", "dump_objects", "load", "load_objects", "load_sources",
]
