"""Pinned images and chart versions of what Modelplane installs, each overridable from stack config.

Every default is a real, published artifact; the comment beside it says where the pin was read.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

PINNED_BY_DIGEST = re.compile(r"[^@\s]+@sha256:[0-9a-f]{64}")
"""An image reference that names its content (`REPOSITORY@sha256:<64 hex digits>`): a tag can be moved to another
image after the reference was reviewed, a digest cannot."""
DIGEST_PINNED = ("downloader_image",)
"""The settings that must be pinned by digest when set: the images Modelplane runs with a secret in reach
(the download Job holds the Hugging Face token). Their defaults name no published image."""


def unpinned(overrides: Mapping[str, str]) -> list[str]:
    """The fields of `overrides` (field name -> value) that must be pinned by digest and are not."""
    return [name for name in DIGEST_PINNED if name in overrides and not PINNED_BY_DIGEST.fullmatch(overrides[name])]


@dataclass(frozen=True)
class Settings:
    """Pins for the serving stack and the images Modelplane adds next to the user's engines.

    The Pulumi layer builds this from stack config, one key per field: the field name in
    camelCase under the `modelplane` namespace (`modelplane:envoyGatewayVersion`,
    `modelplane:endpointPickerImage`, ..., `modelplane:eksRwxStorageClass`). A key that is not
    set keeps the default below.
    """

    envoy_gateway_version: str = "v1.7.0"
    """`oci://docker.io/envoyproxy/gateway-helm` (the chart also installs the Gateway API CRDs).
    v1.7 is the first release that honours per-backendRef hostname rewrites (envoyproxy/gateway#7826),
    which the fleet routes to external endpoints use."""

    ai_gateway_version: str = "v0.4.0"
    """`oci://docker.io/envoyproxy/ai-gateway-crds-helm` and `ai-gateway-helm`: the Envoy Gateway
    extension server that routes HTTPRoute backendRefs of kind InferencePool (prefill/decode).
    Pin from the Envoy AI Gateway installation guide ("For version 0.4.x ... --version v0.4.0")."""

    inference_extension_version: str = "v1.0.1"
    """Gateway API Inference Extension release whose `manifests.yaml` installs the InferencePool
    CRDs (kubernetes-sigs/gateway-api-inference-extension releases; shared/crds/ is v1.0.1)."""

    lws_version: str = "0.9.0"
    """LeaderWorkerSet chart `lws` at `oci://registry.k8s.io/lws/charts` (kubernetes-sigs/lws; the
    CRD the manifests are validated against is v0.9.0)."""

    grove_version: str = "v0.1.0-alpha.6"
    """Grove operator chart `grove-charts` at `oci://ghcr.io/ai-dynamo/grove` (ai-dynamo/grove
    docs/installation.md), on `stack: Dynamo` clusters instead of LeaderWorkerSet; the PodCliqueSet CRD
    the manifests are validated against is this tag's."""

    kai_scheduler_version: str = "v0.16.8"
    """KAI scheduler chart `kai-scheduler` at `oci://ghcr.io/nvidia/kai-scheduler` (NVIDIA/KAI-Scheduler
    README), on `stack: Dynamo` clusters: it schedules every engine pod there."""

    modelexpress_version: str = "0.4.1"
    """ModelExpress server chart `modelexpress` (ai-dynamo/modelexpress helm/Chart.yaml 0.4.1), on
    `stack: Dynamo` clusters, with its metadata CRDs (crds.yaml in the same tag's examples folder)."""

    modelexpress_chart_repository: str = "https://helm.ngc.nvidia.com/nvidia/ai-dynamo"
    """Where the ModelExpress chart is served from. The project's README installs it from its source tree
    and names no repository; this default is NVIDIA's NGC repository of the Dynamo charts (not verified
    to carry `modelexpress`): point it at your own mirror of the chart if it does not."""

    amd_gpu_operator_version: str = "v1.5.0"
    """AMD GPU Operator chart `gpu-operator-charts` at https://rocm.github.io/gpu-operator, on clusters with a
    `gpu.amd.com` class. v1.5.0 is the first release that deploys AMD's DRA driver (`spec.draDriver` of its
    DeviceConfig, exclusive with the device plugin; ROCm/gpu-operator release notes) and creates the
    `gpu.amd.com` DeviceClass."""

    nfd_version: str = "0.18.3"
    """Node Feature Discovery chart at `oci://registry.k8s.io/nfd/charts` (its README's quick start).
    The DRA driver's kubelet plugin selects GPU nodes by NFD's `pci-10de.present` label."""

    dra_driver_version: str = "25.12.0"
    """NVIDIA DRA Driver for GPUs, chart `nvidia-dra-driver-gpu` at https://helm.ngc.nvidia.com/nvidia
    (NVIDIA GPU Operator docs: "install the NVIDIA DRA Driver for GPUs v25.12.0 and later")."""

    traefik_version: str = "40.2.0"
    """Chart `traefik` at https://traefik.github.io/charts (Traefik Proxy v3.7.1) for an InferenceGateway
    with `backend: Traefik` that gives no `traefik.version`; the version every published manifest of
    the Crossplane-based Modelplane v0.3.1 pins."""

    gateway_api_version: str = "v1.5.1"
    """Gateway API release whose standard-channel CRDs a Traefik gateway's cluster gets first: Traefik
    v3.7 watches TLSRoute and BackendTLSPolicy as `v1` (gateway-api v1.5.1 in its go.mod), while Envoy
    Gateway v1.7's chart would bring v1.4.1, which serves no TLSRoute `v1`."""

    metallb_version: str = "0.14.9"
    """Chart `metallb` at https://metallb.github.io/metallb, for `traefik.loadBalancer: MetalLB` (the
    version the Crossplane-based Modelplane v0.3.1 installs)."""

    endpoint_picker_image: str = "ghcr.io/llm-d/llm-d-inference-scheduler:v0.3.2"
    """The endpoint picker with prefill/decode scheduling profiles (llm-d's build of the Gateway API
    Inference Extension EPP; the upstream EPP image has no prefill/decode plugins). v0.3.x is built
    on Inference Extension v1.0.x and reads the `inference.networking.k8s.io/v1` InferencePool."""

    pd_sidecar_image: str = "ghcr.io/llm-d/llm-d-routing-sidecar:v0.3.0"
    """llm-d's prefill/decode routing sidecar in front of the decode engine (llm-d v0.3 release,
    the same train as the endpoint picker above)."""

    downloader_image: str = "hf-downloader.modelplane.invalid/hf-downloader:2.4.0"
    """The ModelCache download Job's image: images/downloader (huggingface_hub's `hf` baked in, its packages
    pinned by hash; the Job installs nothing at run time). This project publishes no image, so the default
    names one under `.invalid`, which never resolves and cannot be taken by anyone: a Job fails to pull it
    until stack config `modelplane:downloaderImage` names the image you built, pinned by digest."""

    huggingface_hub_version: str = "2.4.0"
    """The `huggingface_hub` version images/downloader bakes in (its requirements.txt pins it by hash); the
    Job runs its `hf download --revision --local-dir`."""

    gke_rwx_storage_class: str = "modelplane-rwx"
    """ReadWriteMany StorageClass for ModelCache volumes on GKE clusters: a Filestore CSI class the
    GKE cluster component creates on the cluster's own network (GKE's built-in `standard-rwx` puts
    Filestore on the project's `default` network, which the cluster's VPC cannot reach)."""

    eks_rwx_storage_class: str = "efs-sc"
    """ReadWriteMany StorageClass for ModelCache volumes on EKS clusters (an EFS CSI class the
    platform team creates; EKS has no built-in ReadWriteMany class)."""

    aks_rwx_storage_class: str = "modelplane-rwx"
    """ReadWriteMany StorageClass for ModelCache volumes on AKS clusters: an Azure Files class the AKS
    cluster component creates (AKS bundles the Azure Files CSI driver)."""

    nebius_rwx_storage_class: str = "modelplane-rwx"
    """ReadWriteMany StorageClass for ModelCache volumes on Nebius clusters: a class on the shared
    filesystem the Nebius cluster component creates and mounts on every node."""
