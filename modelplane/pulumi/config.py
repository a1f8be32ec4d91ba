"""Stack config -> `ModelplaneArgs`: the only place the program reads configuration.

Keys (namespace `modelplane` unless noted):
- `source`: where the manifests come from. `files` (default): the files and directories `manifests`
  lists. `cluster`: the modelplane.ai objects on the control cluster (`control_cluster`), reached with
  the secret key `controlKubeconfig`, or in-cluster without it (the Pulumi Kubernetes Operator's
  workspace); their status is written back on `up`.
- `manifests` (required with `source: files`): list of manifest files/directories, relative to the
  project directory.
- `strict`: true makes an unschedulable deployment an error, and with `source: cluster` an invalid
  object too (by default it is held at its last accepted version, or skipped when never accepted,
  with a warning: `api.served`). Default false.
- one key per `compose.Settings` field, camelCase (`envoyGatewayVersion`, `lwsVersion`,
  `endpointPickerImage`, `gkeRwxStorageClass`, ...): overrides that pin. Unset keys keep
  `compose.Settings()`. `downloaderImage` must be pinned by digest (`compose.settings.DIGEST_PINNED`).
- `secrets` (secret, set with `--path`): `secrets.<namespace>.<secret>.<key>` is the value of a
  Secret compose delivers, e.g. a ModelCache's Hugging Face token:
  `pulumi config set --secret --path 'modelplane:secrets.ml-team.hf-token.HF_TOKEN' hf_...`.
- each Existing cluster's kubeconfig, from the secret key its manifest names
  (`spec.cluster.existing.kubeconfig`; `onpremKubeconfig` means `modelplane:onpremKubeconfig`), or,
  for a manifest that names a Secret (`existing.secretRef: {name, key}`, the Crossplane-era form),
  from `secrets.modelplane-system.<name>.<key>`: the Secret's namespace on the control cluster,
  its name and key; with `source: cluster`, from that Secret itself when config does not hold it.
  A missing one is an error that names the key to set.
- `credentials` (secret, set with `--path`): `credentials.<name>.<setting>` is one setting of the
  credentials set `<name>` that a cluster's `credentials.name` picks: the cloud provider's own
  configuration keys (`subscriptionId`, `clientSecret`, `apiKey`, `parentId`, `profile`, ...), given
  to an explicit provider for that cluster. Without a set, the default `default` is the stack's
  ambient provider configuration; any other undefined name is an error.
- `servingStack`: true (default) installs each cluster's serving stack (Helm charts, CRDs); false
  skips it on every cluster, or a map `{cluster: false}` skips it per cluster, for clusters that
  already run Envoy Gateway, LeaderWorkerSet, the DRA driver and the CRDs (brownfield, or charts
  that cannot be downloaded). modelplane's own GatewayClass and inference Gateway are still created.
  The map's key `_control` (`api.CONTROL_CLUSTER`) is the control cluster's stack, the fleet gateway
  backend's add-ons when an InferenceGateway without `spec.cluster` runs there (`source: cluster`).
- `skipAwait`: true stops Pulumi waiting for workloads to become ready (`pulumi.com/skipAwait`):
  for fleets that should not block `up` on model downloads, or clusters without kubelets. Gateways
  still wait for their address, which routing needs. Default false.
- `gatewayAddresses`: `{cluster: address}`, and `_fleet` for the fleet gateway: the address of a
  Gateway no controller writes one for (a fixed load balancer or DNS name in front of it; the local
  demo, where no Gateway controller runs). Such a Gateway is created without waiting for
  `status.addresses`, and routes and service URLs use the given address. Default: none.
- `gcp:project`: the project of GKE clusters whose manifest names none. EKS clusters use the region
  their manifest names, with the standard AWS credential chain; `aws:region` configures the default
  AWS provider only.
Secret values are wrapped in secret Outputs as they are read; manifests never hold them (they name
config keys), so nothing secret reaches the placement's inputs.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import fields, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pulumi
from pydantic.alias_generators import to_camel, to_snake

from modelplane.api import CONTROL_CLUSTER, ClusterSource, ManifestErrors, Manifests, load
from modelplane.api.slices import Published
from modelplane.api.problems import printable
from modelplane.compose import Settings
from modelplane.compose.settings import unpinned
from modelplane.invariants import present
from modelplane.compose.control_plane import KUBECONFIG_SECRETS
from modelplane.pulumi.clusters import ProviderSettings, provider_settings
from modelplane.pulumi.fleet import FLEET_GATEWAY, ModelplaneArgs, SecretKey
from modelplane.pulumi.names import config_path

if TYPE_CHECKING:
    from modelplane.pulumi.control_cluster import ControlCluster

NAMESPACE = "modelplane"
SOURCES = ("files", "cluster")
SECRET_NAMESPACE = "modelplane-system"
"""The namespace of the kubeconfig Secrets Existing clusters name (on the control cluster)."""


def read_stack_config(project_dir: Path) -> ModelplaneArgs:
    """Everything `Modelplane` needs, from the stack's config; manifest errors end the run cleanly."""
    config = pulumi.Config(NAMESPACE)
    strict = config.get_bool("strict") or False
    control = control_cluster(config, strict)
    manifests = control.manifests if control else load_manifests(project_dir, config.require_object("manifests"))
    secret_tree = config.get_object("secrets") or {}
    observed, published = observed_clusters(manifests, secret_tree, control) if control is not None else ({}, {})
    return {"manifests": manifests, "strict": strict, "control_cluster": control, "observed": observed,
            "published": published,
            "settings": settings(config), "kubeconfigs": kubeconfigs(manifests, secret_tree, control),
            "credentials": credentials(manifests, config.get_object("credentials") or {}),
            "prerequisites_installed_on": prerequisites_installed_on(manifests, config.get("servingStack")),
            "skip_await": config.get_bool("skipAwait") or False,
            "gateway_addresses": gateway_addresses(manifests, config.get_object("gatewayAddresses")),
            "secrets": secrets(secret_tree),
            "gcp_project": pulumi.Config("gcp").get("project")}


def control_cluster(config: pulumi.Config, strict: bool) -> ControlCluster | None:
    """The control cluster the manifests are read from (`source: cluster`); None for `source: files`."""
    source = config.get("source") or SOURCES[0]
    if source not in SOURCES:
        raise pulumi.RunError(f"modelplane:source is {source!r}; use {' or '.join(SOURCES)} (the default: files)")
    if source == "files":
        return None
    from modelplane.pulumi.control_cluster import read_control_cluster  # the kubernetes client, only when used

    return read_control_cluster(config, strict)


def load_manifests(project_dir: Path, paths: Any) -> Manifests:
    if isinstance(paths, str):
        paths = [paths]
    if not isinstance(paths, list) or not all(isinstance(path, str) for path in paths):
        raise pulumi.RunError("modelplane:manifests must be a list of manifest files or directories, e.g. "
                              "pulumi config set --path 'modelplane:manifests[0]' examples/multi-cloud")
    try:
        manifests = load([project_dir / path for path in paths])
    except ManifestErrors as errors:
        for warning in errors.warnings:
            pulumi.log.warn(str(warning))
        raise pulumi.RunError(f"{len(errors.errors)} error(s) in the manifests:\n"
                              + "\n".join(str(problem) for problem in errors.errors)) from None
    for warning in manifests.warnings:
        pulumi.log.warn(str(warning))
    return manifests


def settings(config: pulumi.Config) -> Settings:
    """`compose.Settings()` with every field set in config overridden."""
    overrides = {field.name: value for field in fields(Settings)
                 if (value := config.get(to_camel(field.name))) is not None}
    if wrong := unpinned(overrides):
        raise pulumi.RunError(f"modelplane:{to_camel(wrong[0])} must name its image by digest, e.g. "
                              "registry.example.com/hf-downloader@sha256:<64 hex digits> (docs/security.md): a tag "
                              f"can be moved to another image; got '{printable(overrides[wrong[0]], newlines=False)}'")
    return replace(Settings(), **overrides)


def prerequisites_installed_on(manifests: Manifests, text: str | None) -> frozenset[str]:
    """The clusters whose serving stack is installed, from `modelplane:servingStack` (see the module
    docstring): absent or true means all, false none, `{cluster: bool}` per cluster (default true);
    `CONTROL_CLUSTER` stands for the control cluster."""
    declared = sorted(cluster.name for cluster in manifests.fleet.clusters)
    clusters = frozenset({CONTROL_CLUSTER, *declared})
    try:
        value = True if text is None else json.loads(text)
    except json.JSONDecodeError:
        value = text
    if value is True:
        return clusters
    if value is False:
        return frozenset()
    if not isinstance(value, Mapping) or not all(isinstance(flag, bool) for flag in value.values()):
        raise pulumi.RunError("modelplane:servingStack must be true, false or a map of cluster name -> true/false, "
                              "e.g. pulumi config set --path 'modelplane:servingStack.onprem-us-east' false")
    unknown = sorted(set(value) - clusters)
    if unknown:
        raise pulumi.RunError(f"modelplane:servingStack names clusters the manifests do not declare: "
                              f"{', '.join(unknown)} (clusters: {', '.join(declared)}; {CONTROL_CLUSTER}: the control "
                              "cluster)")
    return frozenset(name for name in clusters if value.get(name, True))


def observed_clusters(manifests: Manifests, secret_tree: Any, control: ControlCluster
                      ) -> tuple[dict[str, Any], dict[str, Published | str]]:
    """Control-cluster mode: each Existing cluster whose kubeconfig is known now, observed (Nodes,
    ResourceSlices: `observe.py`), as the placement's `observed` input; and what each publishes (or why
    that was not read), for its status."""
    from modelplane.pulumi.observe import observe_fleet  # the kubernetes client, only when used
    from modelplane.scheduling.observed import observations_to_json

    texts: dict[str, str] = {}
    for cluster in manifests.fleet.clusters:
        existing = cluster.spec.cluster.existing
        if cluster.spec.cluster.source is not ClusterSource.EXISTING or existing is None:
            continue
        value: object = None
        if existing.secret_ref is None and existing.kubeconfig is not None:
            namespace, _, key = existing.kubeconfig.rpartition(":")
            value = pulumi.runtime.get_config(f"{namespace or NAMESPACE}:{key}")
        elif existing.secret_ref is not None:
            ref = existing.secret_ref
            value = _lookup(secret_tree, SECRET_NAMESPACE, ref.name, ref.key)
            if not isinstance(value, str):
                value = control.secret_value(SECRET_NAMESPACE, ref.name, ref.key)
        if isinstance(value, str):
            texts[cluster.name] = value
    observations, published = observe_fleet(manifests.fleet, texts)
    return observations_to_json(observations), published


def gateway_addresses(manifests: Manifests, value: Any) -> dict[str, str]:
    """`modelplane:gatewayAddresses` (see the module docstring): cluster name (or `_fleet`) -> address."""
    if value is None:
        return {}
    declared = sorted(cluster.name for cluster in manifests.fleet.clusters)
    if not isinstance(value, Mapping) or not all(isinstance(a, str) and a for a in value.values()):
        raise pulumi.RunError("modelplane:gatewayAddresses must be a map of cluster name (or _fleet) -> address, "
                              "e.g. pulumi config set --path 'modelplane:gatewayAddresses.east' gw.east.example.com")
    unknown = sorted(set(value) - {FLEET_GATEWAY, *declared})
    if unknown:
        raise pulumi.RunError(f"modelplane:gatewayAddresses names clusters the manifests do not declare: "
                              f"{', '.join(unknown)} (clusters: {', '.join(declared)}; {FLEET_GATEWAY}: the fleet "
                              "gateway)")
    return dict(sorted(value.items()))


def kubeconfigs(manifests: Manifests, secret_tree: Any, control: ControlCluster | None = None
                ) -> dict[str, pulumi.Output[str]]:
    """Existing cluster -> its kubeconfig: from the secret config key its manifest names, or from
    `modelplane:secrets` (else the control cluster) for the Secret it names (see the module docstring)."""
    found: dict[str, pulumi.Output[str]] = {}
    readable = set(pulumi.Config(NAMESPACE).get_object(KUBECONFIG_SECRETS.partition(":")[2]) or ())
    for cluster in manifests.fleet.clusters:
        existing = cluster.spec.cluster.existing
        if cluster.spec.cluster.source is not ClusterSource.EXISTING or existing is None:
            continue
        if existing.identity_secret_ref is not None:
            pulumi.log.warn(f"InferenceCluster {cluster.name}: spec.cluster.existing.identitySecretRef is read only "
                            "with the control cluster; from files, the kubeconfig's credential plugin runs with the "
                            "credentials of the machine running Pulumi" if control is None else
                            f"InferenceCluster {cluster.name}: spec.cluster.existing.identitySecretRef is not read yet: "
                            "the kubeconfig's credential plugin runs with the credentials of the operator's workspace")
        if existing.secret_ref is None:
            kubeconfig = present(existing.kubeconfig, f"validated: InferenceCluster {cluster.name}'s existing block "
                                                      "names a kubeconfig key or a Secret")
            namespace, _, key = kubeconfig.rpartition(":")
            found[cluster.name] = pulumi.Config(namespace or NAMESPACE).require_secret(key)
            continue
        ref = existing.secret_ref
        value = _lookup(secret_tree, SECRET_NAMESPACE, ref.name, ref.key)
        if not isinstance(value, str) and control is not None:
            if ref.name not in readable:
                raise pulumi.RunError(
                    f"InferenceCluster {cluster.name}: spec.cluster.existing.secretRef names Secret {ref.name!r}, which "
                    f"the control plane may not read (it may read: {', '.join(sorted(readable)) or 'none'}); if it "
                    f"holds this cluster's kubeconfig, re-render with `modelplane control-plane --kubeconfig-secret "
                    f"{ref.name} ...` and apply it")
            value = control.secret_value(SECRET_NAMESPACE, ref.name, ref.key)
        if not isinstance(value, str):
            where = "is not in stack config" if control is None else "is neither on the control cluster nor in stack config"
            raise pulumi.RunError(
                f"InferenceCluster {cluster.name}: its kubeconfig Secret {ref.name!r} (key {ref.key!r}) {where}; "
                f"set it with: pulumi config set --secret --path "
                f"'{config_path(NAMESPACE, 'secrets', SECRET_NAMESPACE, ref.name, ref.key)}' < kubeconfig"
                + (f" or: kubectl create secret generic {ref.name} -n {SECRET_NAMESPACE} "
                   f"--from-file={ref.key}=kubeconfig" if control is not None else ""))
        found[cluster.name] = pulumi.Output.secret(value)
    return found


def credentials(manifests: Manifests, tree: Any) -> dict[str, ProviderSettings]:
    """`{name: {setting: value}}` -> credentials set -> provider arguments (snake_case, secret values);
    every set a provisioned cluster names must exist (`default` may stay ambient)."""
    if not isinstance(tree, Mapping) or not all(isinstance(settings, Mapping) for settings in tree.values()):
        raise pulumi.RunError("modelplane:credentials must map a credentials set's name -> provider setting -> "
                              "value, e.g. pulumi config set --secret --path 'modelplane:credentials.prod.apiKey' ...")
    found = {name: {to_snake(key): pulumi.Output.secret(value) for key, value in sorted(settings.items())}
             for name, settings in sorted(tree.items())}
    for cluster in manifests.fleet.clusters:
        try:
            provider_settings(cluster, found)
        except ValueError as error:
            raise pulumi.RunError(str(error)) from None
    return found


def _lookup(tree: Any, *path: str) -> Any:
    for part in path:
        if not isinstance(tree, Mapping):
            return None
        tree = tree.get(part)
    return tree


def secrets(tree: Mapping[str, Any]) -> dict[SecretKey, pulumi.Output[str]]:
    """`{namespace: {secret: {key: value}}}` -> (namespace, secret, key) -> secret Output."""
    found: dict[SecretKey, pulumi.Output[str]] = {}
    shape = "modelplane:secrets must map namespace -> Secret name -> key -> value (set it with --path)"
    if not isinstance(tree, Mapping):
        raise pulumi.RunError(shape)
    for namespace, by_name in tree.items():
        if not isinstance(by_name, Mapping) or not all(isinstance(keys, Mapping) for keys in by_name.values()):
            raise pulumi.RunError(shape)
        for name, by_key in by_name.items():
            for key, value in by_key.items():
                found[(namespace, name, key)] = pulumi.Output.secret(str(value))
    return found
