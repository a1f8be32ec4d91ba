"""The control cluster's manifests: what makes the fleet always reconciling, without a controller of ours.

`control_plane(settings)` returns, in apply order:
- the modelplane CRDs (`modelplane.api.crds`);
- the namespace of the stack and the workspace's ServiceAccount, bound to `system:auth-delegator`
  (the Pulumi Kubernetes Operator's workspace authenticates its agent's callers with it), to a
  ClusterRole that lists the modelplane.ai objects and patches their status, and, when
  `kubeconfig_secrets` names any, to a Role that reads exactly those Secrets (`resourceNames`) in
  the namespace: the kubeconfigs of Existing clusters (`existing.secretRef`), never the operator's
  own credentials (`env_secret`) or any other Secret there;
- the operator's `Stack` (pulumi.com/v1) that runs this program for `settings.stack` in cluster mode
  (in the split layout, `settings.clusters`, as the fleet stack, plus one `Stack` per workload cluster)
  (`modelplane:source: cluster`) every `resync_seconds` even when nothing changed
  (`continueResyncOnCommitMatch`), refreshing first, with `modelplane:kubeconfigSecrets` (the
  program refuses an `existing.secretRef` outside it), with the Secret's keys as environment
  (`envRefs`: the passphrase or access token, cloud credentials), from the workspace image with the
  program and its dependencies baked in (`local.dir`; the Dockerfile at the repository's root).
The operator itself is a pinned Helm chart (`settings.operator_chart`, `operator_version`) that the
Pulumi layer installs; `scaled_object(...)` is a KEDA ScaledObject for a deployment. Pure: plain dicts,
the same every time; `control_plane_files` lays them out for `modelplane control-plane --render DIR`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from modelplane.api.base import check_dns_subdomain
from modelplane.api.crds import SERVED_KINDS, custom_resource_definitions
from modelplane.compose import names
from modelplane.compose.files import dump_all

STACK_API = "pulumi.com/v1"
RECONCILE_REQUEST = "pulumi.com/reconciliation-request"
"""The annotation whose new value makes the operator run a Stack now (`modelplane reconcile`)."""
MIN_RESYNC_SECONDS = 60
"""The operator's minimum resync period: shorter values are treated as 60."""
PART_OF = {"app.kubernetes.io/part-of": "modelplane"}
AUTH_DELEGATOR = "system:auth-delegator"
KUBECONFIG_SECRETS = "modelplane:kubeconfigSecrets"
"""The Stack's config key listing the Secrets its Role lets the program read."""
STACK_NAME_LIMIT = 42
"""The operator's limit on a Stack object's name."""


@dataclass(frozen=True)
class ControlPlaneSettings:
    """What the platform team chooses once; every field has a default but `stack` and `image` are theirs."""

    stack: str = "fleet"
    """The Pulumi stack the operator runs: `org/project/stack` on Pulumi Cloud, the stack name on a
    self-managed backend."""
    image: str = "modelplane-workspace:0.1.0"
    """The workspace image built from the repository's Dockerfile (program and dependencies baked in)."""
    namespace: str = "modelplane-system"
    """Where the Stack, its workspace and the Secrets it reads live (also the namespace of the kubeconfig
    Secrets that Existing clusters name)."""
    backend: str | None = None
    """The Pulumi backend URL (`s3://...`, `gs://...`, `azblob://...`); None is Pulumi Cloud."""
    env_secret: str = "modelplane-pulumi"
    """The Secret in `namespace` whose `env_keys` become the workspace's environment."""
    env_keys: tuple[str, ...] = ("PULUMI_ACCESS_TOKEN",)
    """Keys of `env_secret`, each exported under its own name: PULUMI_ACCESS_TOKEN (Pulumi Cloud) or
    PULUMI_CONFIG_PASSPHRASE (a self-managed backend's passphrase secrets), and cloud credentials
    (AWS_ACCESS_KEY_ID, GOOGLE_CREDENTIALS, ...)."""
    resync_seconds: int = MIN_RESYNC_SECONDS
    """How often the operator re-runs `pulumi up` when nothing changed; at least 60."""
    program_dir: str = "/home/pulumi/modelplane"
    """Where the Dockerfile puts the program in the image."""
    operator_chart: str = "oci://ghcr.io/pulumi/helm-charts/pulumi-kubernetes-operator"
    """The Pulumi Kubernetes Operator's Helm chart (published by its release workflow to GHCR)."""
    operator_version: str = "2.9.0"
    """The chart version (operator v2.9.0; the Stack CRD the manifests are validated against)."""
    operator_namespace: str = "pulumi-kubernetes-operator"
    kubeconfig_secrets: tuple[str, ...] = ()
    """The Secrets in `namespace` holding Existing clusters' kubeconfigs, the only Secrets the workspace may read."""
    clusters: tuple[str, ...] = ()
    """The workload clusters of the split layout (docs/pulumi.md, "Splitting the fleet"): the operator runs
    `stack` as the fleet stack and one workload stack per cluster (`cluster_stack`). Default: none, one
    stack for the whole fleet."""

    def __post_init__(self) -> None:
        for secret in self.kubeconfig_secrets:
            check_dns_subdomain(secret)
            if secret == self.env_secret:
                raise ValueError(f"{secret!r} is the operator's own credentials (env_secret), not a kubeconfig Secret")
        if self.resync_seconds < MIN_RESYNC_SECONDS:
            raise ValueError(f"resync_seconds {self.resync_seconds} is below the operator's minimum of "
                             f"{MIN_RESYNC_SECONDS}")
        if not self.env_keys:
            raise ValueError("env_keys names no key: the workspace needs PULUMI_ACCESS_TOKEN or "
                             "PULUMI_CONFIG_PASSPHRASE at least")

    @property
    def stack_resource(self) -> str:
        """The Stack object's name: `modelplane-<stack>` (the last part of `org/project/stack`)."""
        return stack_resource(self.stack)

    def cluster_stack(self, cluster: str) -> str:
        """The Pulumi stack of `cluster`'s workloads: `<stack>-<cluster>` (`org/project/prod-east`)."""
        return f"{self.stack}-{cluster}"

    @property
    def service_account(self) -> str:
        return f"{self.stack_resource}-workspace"


def control_plane(settings: ControlPlaneSettings) -> list[dict[str, Any]]:
    """Every manifest of the control cluster, in apply order (see the module docstring)."""
    return [*custom_resource_definitions(), *access(settings), *stacks(settings)]


def access(settings: ControlPlaneSettings) -> list[dict[str, Any]]:
    """The namespace, the workspace's ServiceAccount and what it may do."""
    account, namespace = settings.service_account, settings.namespace
    subject = [{"kind": "ServiceAccount", "name": account, "namespace": namespace}]
    rbac = "rbac.authorization.k8s.io/v1"
    status_kinds = [f"{served.plural}/status" for served in SERVED_KINDS if served.status]
    return [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": _meta(namespace)},
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": _meta(account, namespace)},
        {"apiVersion": rbac, "kind": "ClusterRoleBinding", "metadata": _meta(f"{account}:{AUTH_DELEGATOR}"),
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": AUTH_DELEGATOR},
         "subjects": subject},
        {"apiVersion": rbac, "kind": "ClusterRole", "metadata": _meta(account),
         "rules": [{"apiGroups": ["modelplane.ai"], "resources": [served.plural for served in SERVED_KINDS],
                    "verbs": ["get", "list", "watch"]},
                   {"apiGroups": ["modelplane.ai"], "resources": status_kinds, "verbs": ["get", "patch"]}]},
        {"apiVersion": rbac, "kind": "ClusterRoleBinding", "metadata": _meta(account),
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": account},
         "subjects": subject},
    ] + ([
        {"apiVersion": rbac, "kind": "Role", "metadata": _meta(account, namespace),
         "rules": [{"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"],
                    "resourceNames": sorted(settings.kubeconfig_secrets)}]},
        {"apiVersion": rbac, "kind": "RoleBinding", "metadata": _meta(account, namespace),
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": account},
         "subjects": subject},
    ] if settings.kubeconfig_secrets else [])


def stack(settings: ControlPlaneSettings) -> dict[str, Any]:
    """The operator's Stack that runs this program continuously in cluster mode (the fleet stack of the
    split layout when `settings.clusters` names workload clusters: it reads their stacks)."""
    config: dict[str, Any] = {"modelplane:source": "cluster", KUBECONFIG_SECRETS: sorted(settings.kubeconfig_secrets)}
    if settings.clusters:
        config.update({"modelplane:role": "fleet", "modelplane:clusterStacks": {
            cluster: settings.cluster_stack(cluster) for cluster in sorted(settings.clusters)}})
    return _stack(settings, settings.stack, config)


def stacks(settings: ControlPlaneSettings) -> list[dict[str, Any]]:
    """Every Stack the operator runs: the fleet's, then one per workload cluster of the split layout.

    A workload stack reads the fleet stack's outputs and the fleet stack reads the workload stacks'
    (`pulumi.roles.stack_outputs`). The workload Stacks carry no `prerequisites` on the fleet's:
    reading a stack that does not exist yet fails the run (pulumi/pulumi#19202), so on the
    first install the fleet stack fails until each workload stack has run once (which creates it),
    and with prerequisites no workload stack would ever run. Each one runs every resync period, and
    `modelplane reconcile --all` runs them all now."""
    return [stack(settings), *(_stack(settings, settings.cluster_stack(cluster), {
        "modelplane:role": "cluster", "modelplane:cluster": cluster, "modelplane:fleetStack": settings.stack})
        for cluster in sorted(settings.clusters))]


def stack_resource(pulumi_stack: str) -> str:
    """The Stack object's name of a Pulumi stack: `modelplane-<stack>` (the last part of `org/project/stack`)."""
    return names.name("modelplane", pulumi_stack.rsplit("/", 1)[-1], limit=STACK_NAME_LIMIT)


def _stack(settings: ControlPlaneSettings, pulumi_stack: str, config: dict[str, Any]) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "stack": pulumi_stack,
        "serviceAccountName": settings.service_account,
        "refresh": True,
        "continueResyncOnCommitMatch": True,
        "resyncFrequencySeconds": settings.resync_seconds,
        "config": config,
        "envRefs": {key: {"type": "Secret", "secret": {"name": settings.env_secret, "key": key}}
                    for key in sorted(settings.env_keys)},
        "workspaceTemplate": {"spec": {"image": settings.image, "imagePullPolicy": "IfNotPresent",
                                       "local": {"dir": settings.program_dir}}},
    }
    if settings.backend:
        spec["backend"] = settings.backend
    return {"apiVersion": STACK_API, "kind": "Stack",
            "metadata": _meta(stack_resource(pulumi_stack), settings.namespace), "spec": spec}


def scaled_object(namespace: str, deployment: str, served_model: str, *, prometheus: str, threshold: int = 8,
                  max_replicas: int = 4) -> dict[str, Any]:
    """A KEDA ScaledObject that scales a ModelDeployment on vLLM's waiting requests (Prometheus trigger).

    The HPA KEDA creates sets `replicas` through the deployment's scale subresource to
    ceil(waiting requests / threshold), between 1 and `max_replicas`. Not 0: the trigger reads the
    engines' own metric, which no engine reports at zero, so nothing would scale it back up (the schema
    admits 0 for a trigger that does not need a running engine: docs/scale-to-zero.md).
    """
    return {
        "apiVersion": "keda.sh/v1alpha1", "kind": "ScaledObject",
        "metadata": {"name": deployment, "namespace": namespace},
        "spec": {
            "scaleTargetRef": {"apiVersion": "modelplane.ai/v1alpha1", "kind": "ModelDeployment", "name": deployment},
            "minReplicaCount": 1, "maxReplicaCount": max_replicas, "pollingInterval": 30,
            "advanced": {"horizontalPodAutoscalerConfig": {"behavior": {
                "scaleUp": {"stabilizationWindowSeconds": 0},
                "scaleDown": {"stabilizationWindowSeconds": 600}}}},
            "triggers": [{"type": "prometheus", "metadata": {
                "serverAddress": prometheus,
                "query": f'sum(vllm:num_requests_waiting{{namespace="{namespace}",model_name="{served_model}"}})',
                "threshold": str(threshold)}}],
        },
    }


def _meta(name: str, namespace: str | None = None) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name, "labels": dict(PART_OF)}
    if namespace:
        metadata["namespace"] = namespace
    return metadata


EXAMPLE_PROMETHEUS = "http://prometheus-operated.monitoring.svc:9090"


def example_scaled_object() -> dict[str, Any]:
    """The example ScaledObject: examples/always-on's qwen3-8b deployment on its served model's queue."""
    return scaled_object("ml-team", "qwen3-8b", "qwen3-8b", prometheus=EXAMPLE_PROMETHEUS)


def control_plane_files(settings: ControlPlaneSettings) -> dict[str, str]:
    """`modelplane control-plane --render DIR`: file name -> YAML, byte-identical across runs. The numbered
    files apply in name order (`kubectl apply --server-side -f DIR`, which leaves `example/` out) once the
    operator runs; the example ScaledObject needs KEDA and the deployment's namespace."""
    return {"1-crds.yaml": dump_all(custom_resource_definitions()), "2-access.yaml": dump_all(access(settings)),
            "3-stack.yaml": dump_all(stacks(settings)),
            "example/scaledobject.yaml": dump_all([example_scaled_object()])}
