"""The serving stack of a workload cluster: the add-ons the Pulumi layer installs before any workload.

`serving_stack(cluster, settings)` lists them in install order (each names what it needs first in
`depends_on`); the cluster that hosts the fleet gateway also gets that gateway's add-ons
(`gateways.cluster_stack`). `control_stack` is the control cluster's, when the fleet gateway runs
there: only what that gateway needs. Three ways to install an add-on, and how the Pulumi layer does each:
- `Install.HELM`: a Helm release (`kubernetes.helm.v3.Release`) of `chart_ref` at `version` in
  `namespace` (created if missing) with `values`. For an OCI `repository` the chart reference is
  `oci://.../<chart>` and no repository option is passed.
- `Install.MANIFEST`: a release manifest published at `manifest_url` (`kubernetes.yaml.v2.ConfigFile`),
  for projects that publish CRDs that way (the Gateway API Inference Extension).
- `Install.OBJECTS`: the plain manifests in `objects`, registered like workload manifests.

cert-manager is not in the list: no chart here needs it (LeaderWorkerSet generates its webhook
certificate itself by default, and the DRA driver's webhook is off by default).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from modelplane.api import ClusterSource, Fleet, InferenceCluster, ServingStack
from modelplane.compose import hardening, names
from modelplane.compose.settings import Settings

SYSTEM_NAMESPACE = "modelplane-system"
GATEWAY_CLASS = "modelplane"
INFERENCE_GATEWAY = "inference"
"""Each workload cluster's Gateway, where every replica's HTTPRoute attaches."""
FLEET_GATEWAY = "fleet"
"""The fleet's front door on the InferenceGateway's cluster, where ModelService routes attach."""
ENVOY_GATEWAY_CONTROLLER = "gateway.envoyproxy.io/gatewayclass-controller"
GATEWAY_PORT = 80
ENVOY_GATEWAY_NAMESPACE = "envoy-gateway-system"
"""Where Envoy Gateway runs, and with it the proxies of every Gateway it serves."""

GPU_TOLERATION = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
"""Provisioned GPU nodes are tainted `nvidia.com/gpu` (NoSchedule: by GKE itself, by the cluster
components on EKS, AKS, Nebius and Vultr) so only GPU workloads land on them; the engines and the
per-node agents that must run there (DRA kubelet plugin, NFD worker) tolerate it."""

_AI_GATEWAY_NAMESPACE = "envoy-ai-gateway-system"
# GKE installs the NVIDIA driver under this host path; AKS (its managed driver) and Nebius (drivers
# presets) install it at the host's root, and so, as the Crossplane-era Modelplane assumed, does
# Vultr's preinstalled GPU Operator (not verified on Vultr: docs/clouds.md).
_GKE_DRIVER_ROOT = "/home/kubernetes/bin/nvidia"


class Install(StrEnum):
    HELM = "helm"
    MANIFEST = "manifest"
    OBJECTS = "objects"


@dataclass(frozen=True)
class Addon:
    """One part of the serving stack; see the module docstring for how each `install` is applied."""

    name: str
    chart: str
    repository: str
    version: str
    namespace: str
    values: Mapping[str, Any] = field(default_factory=dict)
    manifest_url: str = ""
    objects: tuple[dict, ...] = ()
    depends_on: tuple[str, ...] = ()

    @property
    def install(self) -> Install:
        if self.manifest_url:
            return Install.MANIFEST
        return Install.OBJECTS if self.objects else Install.HELM

    @property
    def chart_ref(self) -> str:
        return f"{self.repository}/{self.chart}" if self.repository.startswith("oci://") else self.chart

    def to_dict(self) -> dict[str, Any]:
        """A readable description for `plan --render`."""
        described: dict[str, Any] = {"name": self.name, "install": str(self.install)}
        if self.install is Install.HELM:
            described.update(chart=self.chart_ref, repository=self.repository, version=self.version,
                             namespace=self.namespace, values=dict(self.values))
        elif self.install is Install.MANIFEST:
            described.update(url=self.manifest_url, version=self.version)
        else:
            described["objects"] = list(self.objects)
        if self.depends_on:
            described["dependsOn"] = list(self.depends_on)
        return described


def serving_stack(cluster: InferenceCluster, settings: Settings, before: tuple[Addon, ...] = (),
                  after: tuple[Addon, ...] = (), inference_gateway: tuple[dict, ...] = (),
                  drivers: Collection[str] = (), backends: bool = False) -> tuple[Addon, ...]:
    """The cluster's add-ons; `before` go first (Envoy Gateway waits for them) and `after` last: the
    fleet gateway's, on the cluster that hosts it (`gateways.cluster_stack`). `inference_gateway`: the
    cluster's inference Gateway and what it needs, when the fleet gateway reaches it over TLS
    (`gateways.tls.cluster_gateway_objects`); else the plain-HTTP one. `drivers`: the DRA drivers of
    its pools' classes (`class_drivers`), which pick the GPU vendors' add-ons (`gpu_addons`). `backends`:
    whether Envoy Gateway's `Backend` API is on (`_envoy_gateway_values`)."""
    inference_crds = Addon(
        name="gateway-api-inference-extension-crds", chart="", repository="", namespace="",
        version=settings.inference_extension_version,
        manifest_url=("https://github.com/kubernetes-sigs/gateway-api-inference-extension/releases/download/"
                      f"{settings.inference_extension_version}/manifests.yaml"))
    envoy_gateway = _envoy_gateway(settings, _envoy_gateway_values(backends=backends),
                                   depends_on=(*(addon.name for addon in before), inference_crds.name))
    ai_gateway_crds = Addon(
        name="envoy-ai-gateway-crds", chart="ai-gateway-crds-helm", repository="oci://docker.io/envoyproxy",
        version=settings.ai_gateway_version, namespace=_AI_GATEWAY_NAMESPACE)
    ai_gateway = Addon(
        name="envoy-ai-gateway", chart="ai-gateway-helm", repository="oci://docker.io/envoyproxy",
        version=settings.ai_gateway_version, namespace=_AI_GATEWAY_NAMESPACE,
        depends_on=(ai_gateway_crds.name, envoy_gateway.name))
    gangs = dynamo_addons(settings) if cluster.spec.stack is ServingStack.DYNAMO else (
        Addon(name="lws", chart="lws", repository="oci://registry.k8s.io/lws/charts",
              version=settings.lws_version, namespace="lws-system"),)
    nfd = Addon(name="node-feature-discovery", chart="node-feature-discovery", repository="oci://registry.k8s.io/nfd/charts",
                version=settings.nfd_version, namespace="node-feature-discovery",
                values={"worker": {"tolerations": [dict(GPU_TOLERATION)]}})
    vendors = gpu_addons(cluster, settings, drivers, depends_on=(nfd.name,))
    gateway = Addon(name="inference-gateway", chart="", repository="", version="", namespace=SYSTEM_NAMESPACE,
                    objects=(namespace(SYSTEM_NAMESPACE), gateway_class(),
                             *(inference_gateway or (gateway_object(INFERENCE_GATEWAY, GATEWAY_PORT),))),
                    depends_on=(envoy_gateway.name,))
    return (*before, inference_crds, envoy_gateway, ai_gateway_crds, ai_gateway, *gangs, nfd, *vendors, gateway, *after)


NVIDIA_DRIVER = "gpu.nvidia.com"
AMD_DRIVER = "gpu.amd.com"


def class_drivers(fleet: Fleet, cluster: InferenceCluster) -> frozenset[str]:
    """The DRA drivers of the devices of every class the cluster's pools name."""
    classes = (fleet.inference_class(pool.class_name) for pool in cluster.spec.node_pools)
    return frozenset(device.driver for klass in classes if klass is not None for device in klass.spec.devices)


def gpu_addons(cluster: InferenceCluster, settings: Settings, drivers: Collection[str],
               depends_on: tuple[str, ...]) -> tuple[Addon, ...]:
    """The GPU vendors' DRA add-ons: AMD's GPU operator in DRA mode when a class has `gpu.amd.com`
    devices; NVIDIA's DRA driver when one has `gpu.nvidia.com` devices, or when no class names either
    (the stack's behaviour before AMD support: Synthetic or other devices). A mixed cluster gets both."""
    addons: list[Addon] = []
    if NVIDIA_DRIVER in drivers or AMD_DRIVER not in drivers:
        driver_root = _GKE_DRIVER_ROOT if cluster.spec.cluster.source is ClusterSource.GKE else "/"
        addons.append(Addon(
            name="nvidia-dra-driver-gpu", chart="nvidia-dra-driver-gpu", repository="https://helm.ngc.nvidia.com/nvidia",
            version=settings.dra_driver_version, namespace="nvidia-dra-driver-gpu",
            values={"nvidiaDriverRoot": driver_root, "gpuResourcesEnabledOverride": True,
                    "resources": {"gpus": {"enabled": True}, "computeDomains": {"enabled": False}},
                    "kubeletPlugin": {"tolerations": [dict(GPU_TOLERATION)]}},
            depends_on=depends_on))
    if AMD_DRIVER in drivers:
        # The operator's own NFD and KMM stay off: the stack installs NFD, and KMM only builds
        # out-of-tree kernel drivers (`driver.enable: false` keeps the node's amdgpu driver).
        addons.append(Addon(
            name="amd-gpu-operator", chart="gpu-operator-charts", repository="https://rocm.github.io/gpu-operator",
            version=settings.amd_gpu_operator_version, namespace="kube-amd-gpu",
            values={"node-feature-discovery": {"enabled": False}, "kmm": {"enabled": False},
                    "deviceConfig": {"spec": {"driver": {"enable": False},
                                              "devicePlugin": {"enableDevicePlugin": False},
                                              "draDriver": {"enable": True}}}},
            depends_on=depends_on))
    return tuple(addons)


def dynamo_addons(settings: Settings) -> tuple[Addon, ...]:
    """A `stack: Dynamo` cluster's gang add-ons, in place of LeaderWorkerSet: the KAI scheduler and its
    `modelplane` queue, Grove, and a ModelExpress server keeping metadata only (its Kubernetes backend:
    `ModelMetadata`/`ModelCacheEntry` objects, no weight volume)."""
    kai = Addon(name="kai-scheduler", chart="kai-scheduler", repository="oci://ghcr.io/nvidia/kai-scheduler",
                version=settings.kai_scheduler_version, namespace="kai-scheduler")
    queue = Addon(name="kai-queue", chart="", repository="", version="", namespace="",
                  objects=(kai_queue(),), depends_on=(kai.name,))
    grove = Addon(name="grove", chart="grove-charts", repository="oci://ghcr.io/ai-dynamo/grove",
                  version=settings.grove_version, namespace="grove-system", depends_on=(kai.name,))
    mx_crds = Addon(name="modelexpress-crds", chart="", repository="", namespace="",
                    version=settings.modelexpress_version,
                    manifest_url=("https://raw.githubusercontent.com/ai-dynamo/modelexpress/"
                                  f"v{settings.modelexpress_version}/examples/crds.yaml"))
    modelexpress = Addon(
        name=MODELEXPRESS, chart="modelexpress", repository=settings.modelexpress_chart_repository,
        version=settings.modelexpress_version, namespace=MODELEXPRESS,
        values={"imagePullSecrets": [], "persistence": {"enabled": False},
                "serviceAccount": {"rbac": {"enabled": True}},
                "env": {"MX_METADATA_BACKEND": "kubernetes", "MX_METADATA_NAMESPACE": MODELEXPRESS}},
        depends_on=(mx_crds.name,))
    return kai, queue, grove, mx_crds, modelexpress


KAI_SCHEDULER = "kai-scheduler"
"""The `schedulerName` of every engine pod on a Dynamo cluster."""
KAI_QUEUE_LABEL = "kai.scheduler/queue"
KAI_QUEUE = "modelplane"
MODELEXPRESS = "modelexpress"
MODELEXPRESS_ADDRESS = f"{MODELEXPRESS}.{MODELEXPRESS}.svc.cluster.local:8001"
"""The chart's Service (release name = chart name, so `fullname` is the release's) on its default port 8001."""


def kai_queue() -> dict:
    """A top-level KAI queue without quota or limit: the placement already sized every pool, so the queue
    must never hold a pod back."""
    unbounded = {"quota": -1, "limit": -1, "overQuotaWeight": 1}
    return {"apiVersion": "scheduling.run.ai/v2", "kind": "Queue", "metadata": {"name": KAI_QUEUE, "labels": names.managed()},
            "spec": {"resources": {"cpu": dict(unbounded), "gpu": dict(unbounded), "memory": dict(unbounded)}}}


def control_stack(settings: Settings, envoy_gateway: bool, before: tuple[Addon, ...] = (),
                  after: tuple[Addon, ...] = ()) -> tuple[Addon, ...]:
    """The control cluster's add-ons when it hosts the fleet gateway (`gateways.control_stack`): with
    `envoy_gateway` (the EnvoyGateway backend, which a workload cluster's serving stack brings), Envoy
    Gateway and the `modelplane` GatewayClass; `before` and `after` as for `serving_stack`. Nothing for
    GPUs or replicas, which never run there: no AI Gateway (the fleet routes reach `Backend`s, never an
    InferencePool), no inference Gateway. Never the `modelplane-system` namespace: on the control
    cluster it is the control plane's (the operator's Stack, the kubeconfig Secrets), so it exists
    already, and a stack that managed it would delete it with the gateway."""
    if not envoy_gateway:
        return (*before, *after)
    envoy = _envoy_gateway(settings, _envoy_gateway_values(ai_gateway=False, backends=True),
                           depends_on=tuple(addon.name for addon in before))
    gateway_classes = Addon(name="fleet-gateway-class", chart="", repository="", version="", namespace="",
                            objects=(gateway_class(),), depends_on=(envoy.name,))
    return (*before, envoy, gateway_classes, *after)


def _envoy_gateway(settings: Settings, values: dict[str, Any], depends_on: tuple[str, ...]) -> Addon:
    return Addon(name="envoy-gateway", chart="gateway-helm", repository="oci://docker.io/envoyproxy",
                 version=settings.envoy_gateway_version, namespace=ENVOY_GATEWAY_NAMESPACE, values=values,
                 depends_on=depends_on)


def _envoy_gateway_values(ai_gateway: bool = True, backends: bool = False) -> dict[str, Any]:
    """Envoy Gateway with, when `backends`, its `Backend` API on, and with `ai_gateway` the Envoy AI Gateway
    controller as extension server for InferencePool backendRefs (the values the Envoy AI Gateway project
    publishes in manifests/envoy-gateway-values.yaml and its inference-pool add-on).

    The Backend API is off upstream by default because a Backend may name any address, the cluster's
    own included (CVE-2021-25740-style routing). Modelplane renders Backends only for the EnvoyGateway
    fleet gateway (its cluster hops and external ModelEndpoints), so it is on only where that gateway
    runs; anyone who may create Backends there can still use it (docs/security.md)."""
    values: dict[str, Any] = {
        "gateway": {"controllerName": ENVOY_GATEWAY_CONTROLLER},
        "provider": {"type": "Kubernetes"},
        "extensionApis": {"enableBackend": backends, "enableEnvoyPatchPolicy": True}}
    if ai_gateway:
        every = {"includeAll": True}
        values["extensionManager"] = {
            "backendResources": [{"group": "inference.networking.k8s.io", "kind": "InferencePool", "version": "v1"}],
            "hooks": {"xdsTranslator": {"translation": {"listener": every, "route": every, "cluster": every,
                                                        "secret": every},
                                        "post": ["Translation", "Cluster", "Route"]}},
            "service": {"fqdn": {"hostname": f"ai-gateway-controller.{_AI_GATEWAY_NAMESPACE}.svc.cluster.local",
                                 "port": 1063}}}
    return {"config": {"envoyGateway": values}}


def namespace(name: str) -> dict:
    """A namespace Modelplane renders, with Pod Security admission on (`hardening.NAMESPACE_LABELS`)."""
    return {"apiVersion": "v1", "kind": "Namespace",
            "metadata": {"name": name, "labels": {**names.managed(), **hardening.NAMESPACE_LABELS}}}


def namespaces_named(namespaces: Sequence[str]) -> dict:
    """The label selector of exactly these namespaces (by their `kubernetes.io/metadata.name` label)."""
    return {"matchExpressions": [{"key": "kubernetes.io/metadata.name", "operator": "In",
                                  "values": sorted(set(namespaces))}]}


def gateway_class(name: str = GATEWAY_CLASS, controller: str = ENVOY_GATEWAY_CONTROLLER) -> dict:
    return {"apiVersion": "gateway.networking.k8s.io/v1", "kind": "GatewayClass",
            "metadata": {"name": name, "labels": names.managed()},
            "spec": {"controllerName": controller}}


def gateway_object(name: str, port: int, hostname: str | None = None, *, gateway_class: str = GATEWAY_CLASS,
                   listener: str = "http", certificate: str | None = None, selector: dict | None = None) -> dict:
    """A Gateway in the system namespace with one listener: HTTPS with the `certificate` Secret when
    given, else HTTP; taking routes only from the namespaces `selector` (a label selector) matches
    when given, else from every namespace."""
    allowed: dict[str, Any] = {"from": "Selector", "selector": selector} if selector is not None else {"from": "All"}
    spec: dict[str, Any] = {"name": listener, "protocol": "HTTPS" if certificate else "HTTP", "port": port,
                            "allowedRoutes": {"namespaces": allowed}}
    if certificate:
        spec["tls"] = {"mode": "Terminate", "certificateRefs": [{"group": "", "kind": "Secret", "name": certificate}]}
    if hostname:
        spec["hostname"] = hostname
    return {"apiVersion": "gateway.networking.k8s.io/v1", "kind": "Gateway",
            "metadata": {"name": name, "namespace": SYSTEM_NAMESPACE, "labels": names.managed()},
            "spec": {"gatewayClassName": gateway_class, "listeners": [spec]}}
