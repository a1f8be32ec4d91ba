"""Control-cluster mode: the fleet's manifests are the modelplane.ai objects on a Kubernetes cluster.

`read_control_cluster(config, strict)` connects with the kubeconfig in the secret config key
`modelplane:controlKubeconfig`, or, without that key, in-cluster (the Pulumi Kubernetes Operator's
workspace pod, through its ServiceAccount); lists every modelplane.ai kind with the official
`kubernetes` client; and validates the objects with the same loader as files
(`api.served.load_served`): a refused object is planned with its last accepted version, or skipped
when it never was accepted, with a warning that names it, or fails the run in strict mode. The last
accepted versions are the stack's own output `acceptedObjects` (`api.accepted`), read back through
`stack_outputs.read_outputs` (what a StackReference reads, here of this very stack: its outputs as
the last update left them) and checked, never trusted; `export_record` writes it (secret) with
`refused`, what the run did about each refusal. The read happens while the program runs, in preview
as in up, so the objects are plain data known at preview. It only reads (the objects, and the
kubeconfig Secrets of Existing clusters); the status is written back on `up` by `status.FleetStatus`.

The kubeconfig is held in memory as text: the program hands it to resources only as a secret.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass
from typing import Any

import pulumi
from kubernetes import client, config
from kubernetes.client.exceptions import ApiException
from urllib3.exceptions import HTTPError

from modelplane.api import ManifestErrors, Manifests
from modelplane.api.crds import GROUP, SERVED_KINDS, VERSION
from modelplane.api.accepted import OUTPUT, Accepted, read_record, record
from modelplane.api.served import Served, load_served, refusals
from modelplane.io.kubeconfig import KubeconfigError, client_from_text
from modelplane.pulumi.stack_outputs import own_stack, read_outputs

KUBECONFIG_KEY = "controlKubeconfig"
SOURCE = "control cluster"
"""How problems name where an object came from."""
INSTALL_CRDS = "modelplane crds | kubectl apply --server-side -f -"


class ControlClusterError(pulumi.RunError):
    """The control cluster cannot be read; the message says what to do."""


@dataclass(frozen=True)
class ControlCluster:
    served: Served
    """The objects read and validated, with what the API server said about each."""
    kubeconfig: str | None
    """The kubeconfig the program connected with; None in-cluster."""
    api: client.ApiClient

    @property
    def manifests(self) -> Manifests:
        return self.served.manifests

    def secret_value(self, namespace: str, name: str, key: str) -> str | None:
        """One key of a Secret on the control cluster (None when the Secret or the key does not exist)."""
        try:
            secret = client.CoreV1Api(self.api).read_namespaced_secret(name, namespace)
        except ApiException as error:
            if error.status == 404:
                return None
            raise _error(error, f"Secret {namespace}/{name}") from None
        data = (secret.data or {}).get(key)
        return base64.b64decode(data).decode() if data is not None else None


def connect(kubeconfig: str | None) -> client.ApiClient:
    """A client of the control cluster: from a kubeconfig's text, or in-cluster when None."""
    if kubeconfig is None:
        configuration = client.Configuration()
        try:
            config.load_incluster_config(client_configuration=configuration)
        except config.ConfigException as error:
            raise ControlClusterError(
                f"modelplane:source is cluster but modelplane:{KUBECONFIG_KEY} is not set and this is not a pod "
                f"({error}); set it with: pulumi config set --secret modelplane:{KUBECONFIG_KEY} < kubeconfig") from None
        return client.ApiClient(configuration)
    try:
        return client_from_text(kubeconfig)
    except KubeconfigError as error:  # its message quotes none of the kubeconfig
        raise ControlClusterError(f"modelplane:{KUBECONFIG_KEY} {error}") from None


def list_objects(api: client.ApiClient) -> list[dict[str, Any]]:
    """Every modelplane.ai object on the cluster, kind by kind (the API server sorts each list by name)."""
    custom = client.CustomObjectsApi(api)
    items: list[dict[str, Any]] = []
    for served in SERVED_KINDS:
        try:
            listed = custom.list_cluster_custom_object(GROUP, VERSION, served.plural)
        except ApiException as error:
            if error.status == 404:
                raise ControlClusterError(f"the control cluster serves no {served.plural}.{GROUP}: install the "
                                          f"modelplane CRDs with `{INSTALL_CRDS}`") from None
            raise _error(error, f"{served.plural}.{GROUP}") from None
        except HTTPError as error:
            raise ControlClusterError(f"cannot reach the control cluster at {api.configuration.host}: {error}") from None
        items.extend(listed["items"])
    return items


def read_control_cluster(settings: pulumi.Config, strict: bool) -> ControlCluster:
    """Connect, list and validate (see the module docstring); warnings are logged, errors end the run."""
    kubeconfig = settings.get(KUBECONFIG_KEY)
    api = connect(kubeconfig)
    try:
        served = load_served(list_objects(api), SOURCE, strict=strict, accepted=last_accepted())
    except ManifestErrors as errors:
        for warning in errors.warnings:
            pulumi.log.warn(str(warning))
        raise pulumi.RunError(f"{len(errors.errors)} error(s) in the control cluster's objects:\n"
                              + "\n".join(str(problem) for problem in errors.errors)) from None
    for warning in served.manifests.warnings:
        pulumi.log.warn(str(warning))
    return ControlCluster(served, kubeconfig, api)


def last_accepted() -> Accepted:
    """What the previous run of this stack planned with (see the module docstring); an unusable record is
    said once, as a warning."""
    accepted = read_record(read_outputs(own_stack()))
    if not accepted.known:
        pulumi.log.warn(f"{SOURCE}: the last accepted objects are unknown: {accepted.why}; a refused object fails "
                        "this run instead of being kept at its last accepted version")
    return accepted


def export_record(control: ControlCluster) -> None:
    """The stack outputs `acceptedObjects` (secret: specs may hold values a team meant for its own
    cluster) and `refused` (see the module docstring)."""
    pulumi.export(OUTPUT, pulumi.Output.secret(record(control.served.accepted)))
    pulumi.export("refused", refusals(control.served))


def _error(error: ApiException, what: str) -> ControlClusterError:
    if error.status in (401, 403):
        return ControlClusterError(f"the control cluster refused to show {what} ({error.status} {error.reason}): "
                                   "the workspace's ServiceAccount needs the modelplane reader role "
                                   "(`modelplane control-plane --render` writes it)")
    return ControlClusterError(f"the control cluster answered {error.status} {error.reason} for {what}")
