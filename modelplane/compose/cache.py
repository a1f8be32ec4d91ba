"""ModelCache: weights staged once per cluster on a ReadWriteMany volume, mounted at /mnt/models.

Invariants:
- A cache is staged on every cluster its `clusterSelector` matches; without one, on every cluster
  a deployment referencing it may run on (that deployment's `clusterSelector`, or every cluster).
- Per staged cluster, in the cache's namespace: a PVC of `sizeGiB` on the cluster's RWX
  StorageClass, a one-shot download Job and, when the cache names an `authSecret`, that Secret
  (its value is `secret_placeholder(...)`, which the Pulumi layer replaces with the real token).
- The Job is idempotent: it writes a marker holding `repo@revision` last, and skips the download
  when the marker already says so (a Job re-run, or a re-created Job, downloads nothing twice).
- Every engine container of a deployment that references the cache mounts it read-only at
  /mnt/models; `--model=/mnt/models` is added only to a container with no `command` and no
  `--model` of its own (Modelplane never rewrites a command).
"""

from __future__ import annotations

from collections.abc import Iterator

from modelplane.api import (ClusterSource, Fleet, InferenceCluster, LabelSelector, Manifests, ModelCache, ModelDeployment,
                            Workloads)
from modelplane.api.guards import SECRET_PREFIX
from modelplane.api.workload import Container
from modelplane.compose import hardening, names
from modelplane.compose.findings import Finding
from modelplane.compose.settings import Settings
from modelplane.invariants import InvariantError

MOUNT_PATH = "/mnt/models"
VOLUME = "model-cache"
MODEL_ARG = f"--model={MOUNT_PATH}"
MARKER = f"{MOUNT_PATH}/.modelplane-complete"
TOKEN_VOLUME = "hf-token"
TOKEN_DIR = "/var/run/secrets/huggingface"
"""Where the download Job reads its token file (`HF_TOKEN_PATH`, which huggingface_hub reads)."""

# Runs in the downloader image (images/downloader: `hf` baked in, nothing installed at run time);
# REPO and REVISION come from the Job's env.
_DOWNLOAD = f"""set -eu
if [ -f {MARKER} ] && [ "$(cat {MARKER})" = "$REPO@$REVISION" ]; then
  echo "$REPO@$REVISION is already in {MOUNT_PATH}"; exit 0
fi
hf download "$REPO" --revision "$REVISION" --local-dir {MOUNT_PATH}
printf '%s' "$REPO@$REVISION" > {MARKER}
"""


def secret_placeholder(namespace: str, secret: str, key: str) -> str:
    """The value written into a delivered Secret in place of the token, for the Pulumi layer to
    replace with a secret Output (stack config `modelplane:secrets.<namespace>.<secret>.<key>`)."""
    return f"{SECRET_PREFIX}{namespace}/{secret}/{key}"


def pvc_name(cache: ModelCache) -> str:
    return names.name(cache.name, "cache")


def staging(fleet: Fleet, workloads: Workloads) -> Iterator[tuple[ModelCache, tuple[str, ...]]]:
    """Every cache, in order, with the clusters it is staged on, sorted by name (the deployments are
    read once, not once per cache)."""
    users: dict[int, list[ModelDeployment]] = {}
    for deployment in workloads.deployments:
        used = workloads.cache_of(deployment)
        if used is not None:
            users.setdefault(id(used), []).append(deployment)
    selected: dict[tuple[tuple[str, str], ...] | None, frozenset[str]] = {}
    for model_cache in workloads.caches:
        yield model_cache, _staged(model_cache, fleet, users.get(id(model_cache), []), selected)


def _staged(cache: ModelCache, fleet: Fleet, users: list[ModelDeployment],
            selected: dict[tuple[tuple[str, str], ...] | None, frozenset[str]]) -> tuple[str, ...]:
    """The clusters `cache` is staged on, given the deployments that reference it, in fleet order.
    `selected`: the clusters each distinct clusterSelector matches, worked out once for all the
    caches (they and their deployments repeat a few selectors: on the varied 100 x 1,000 benchmark
    fleet, matching 434 caches' users against 100 clusters one by one took 0.24 s of plan's 0.85 s
    of warnings, cProfile)."""
    if cache.spec.cluster_selector is not None:
        chosen = _matching(cache.spec.cluster_selector, fleet, selected)
    else:
        chosen = frozenset().union(*(_matching(d.spec.cluster_selector, fleet, selected) for d in users))
    return tuple(c.name for c in fleet.clusters if c.name in chosen)


def _matching(selector: LabelSelector | None, fleet: Fleet,
              selected: dict[tuple[tuple[str, str], ...] | None, frozenset[str]]) -> frozenset[str]:
    """The names of the clusters `selector` matches (no selector: every cluster)."""
    key = None if selector is None else tuple(sorted(selector.match_labels.items()))
    found = selected.get(key)
    if found is None:
        found = selected[key] = frozenset(c.name for c in fleet.clusters
                                          if selector is None or selector.matches(c.labels))
    return found


def storage_class(cluster: InferenceCluster, settings: Settings) -> str | None:
    """The cluster's ReadWriteMany class: the one its cluster component creates, the one an Existing
    cluster names, or None (Vultr offers none usable on GPU nodes)."""
    spec = cluster.spec.cluster
    created = {ClusterSource.GKE: settings.gke_rwx_storage_class, ClusterSource.EKS: settings.eks_rwx_storage_class,
               ClusterSource.AKS: settings.aks_rwx_storage_class, ClusterSource.NEBIUS: settings.nebius_rwx_storage_class}
    if spec.source in created:
        return created[spec.source]
    return spec.existing.rwx_storage_class if spec.existing else None


def cache_objects(cache: ModelCache, cluster: InferenceCluster, settings: Settings) -> Iterator[dict]:
    """The Secret (if any), PVC and download Job that stage `cache` on `cluster`."""
    labels = {**names.managed(), names.CLUSTER: cluster.name, names.CACHE: cache.name}
    hf = cache.spec.hugging_face
    pvc_spec: dict = {"accessModes": ["ReadWriteMany"], "resources": {"requests": {"storage": f"{hf.size_gib}Gi"}}}
    rwx = storage_class(cluster, settings)
    if rwx:
        pvc_spec["storageClassName"] = rwx
    yield {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
           "metadata": {"name": pvc_name(cache), "namespace": cache.namespace, "labels": labels}, "spec": pvc_spec}

    env = [{"name": "REPO", "value": hf.repo}, {"name": "REVISION", "value": hf.revision}]
    if hf.auth_secret is not None:
        secret = hf.auth_secret
        yield {"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
               "metadata": {"name": secret.name, "namespace": cache.namespace, "labels": {**names.managed(),
                                                                                          names.CLUSTER: cluster.name}},
               "stringData": {secret.key: secret_placeholder(cache.namespace, secret.name, secret.key)}}
    mounts = [{"name": VOLUME, "mountPath": MOUNT_PATH}]
    volumes: list[dict] = [{"name": VOLUME, "persistentVolumeClaim": {"claimName": pvc_name(cache)}}]
    if hf.auth_secret is not None:  # a file, not an environment variable: env is shown by `describe`, logged by tools
        env.append({"name": "HF_TOKEN_PATH", "value": f"{TOKEN_DIR}/{hf.auth_secret.key}"})
        mounts.append({"name": TOKEN_VOLUME, "mountPath": TOKEN_DIR, "readOnly": True})
        volumes.append({"name": TOKEN_VOLUME, "secret": {"secretName": hf.auth_secret.name, "defaultMode": 0o400,
                                                         "items": [{"key": hf.auth_secret.key, "path": hf.auth_secret.key}]}})
    container = {"name": "download", "image": settings.downloader_image, "command": ["/bin/sh", "-c", _DOWNLOAD],
                 "env": env, "volumeMounts": mounts,
                 "securityContext": hardening.hardened(hardening.ENGINE_CONTAINER)}
    yield {"apiVersion": "batch/v1", "kind": "Job",
           "metadata": {"name": names.name(cache.name, "download"), "namespace": cache.namespace, "labels": labels},
           "spec": {"backoffLimit": 6, "template": {
               "metadata": {"labels": labels},
               "spec": {"restartPolicy": "OnFailure", "automountServiceAccountToken": False,
                        "securityContext": hardening.hardened(hardening.ENGINE_POD), "containers": [container],
                        "volumes": volumes}}}}


def volume(cache: ModelCache) -> dict:
    return {"name": VOLUME, "persistentVolumeClaim": {"claimName": pvc_name(cache), "readOnly": True}}


def mount() -> dict:
    return {"name": VOLUME, "mountPath": MOUNT_PATH, "readOnly": True}


def needs_model_arg(container: Container) -> bool:
    """`--model=/mnt/models` goes only to a container that sets no command and no --model."""
    return not container.command and not any(arg == "--model" or arg.startswith("--model=") for arg in container.args)


def storage_findings(manifests: Manifests, settings: Settings) -> list[Finding]:
    """A warning per cluster a cache is staged on without a known ReadWriteMany class."""
    fleet, work = manifests.fleet, manifests.workloads
    # Per cluster, not per (cache, cluster): the standard 100 x 1,000 benchmark fleet stages its
    # caches on 9,453 of those pairs, and this took 11 ms of a `plan` process instead of 3 ms.
    messages = {cluster.name: default_storage_warning(cluster, settings) for cluster in fleet.clusters}
    findings = []
    for model_cache, staged in staging(fleet, work):
        for name in staged:
            if name not in messages:
                raise InvariantError(f"ModelCache {model_cache.namespace}/{model_cache.name} is staged on {name}, "
                                     "a fleet cluster")
            message = messages[name]
            if message:
                findings.append(Finding(model_cache, ("spec",), message, "cache-default-storage-class"))
    return findings


def default_storage_warning(cluster: InferenceCluster, settings: Settings) -> str | None:
    if storage_class(cluster, settings):
        return None
    if cluster.spec.cluster.source is ClusterSource.VULTR:
        return (f"cluster {cluster.name!r} runs on Vultr, which offers no ReadWriteMany StorageClass usable on "
                "GPU nodes (Vultr File System volumes do not attach to them), so the cache's volume uses the "
                "default StorageClass and may never bind; serve single-node engines there without a ModelCache")
    return (f"cluster {cluster.name!r} names no spec.cluster.existing.cache.storageClassName, so the cache's volume "
            "uses the cluster's default StorageClass, which must support ReadWriteMany for every pod of a "
            "gang to mount it")

