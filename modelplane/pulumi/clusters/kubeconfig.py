"""Kubeconfigs for provisioned clusters.

GKE, EKS and Nebius kubeconfigs hold no credential: kubectl and the Pulumi kubernetes provider run
`gke-gcloud-auth-plugin` (GKE), `aws eks get-token` (EKS) or `nebius mk8s v1 cluster get-token`
(Nebius) for a short-lived token, so the machine running `pulumi up` needs that tool and cloud
credentials. AKS and Vultr hand out a kubeconfig with a client certificate, base64-encoded
(`decoded_kubeconfig`). Every kubeconfig is treated as a secret by the components. Pure: strings
in, a string out; JSON is valid YAML, and `json.dumps(..., sort_keys=True)` makes the same inputs
give the same bytes.
"""

from __future__ import annotations

import base64
import binascii
import json
from typing import Any

_EXEC_API = "client.authentication.k8s.io/v1beta1"


def gke_kubeconfig(name: str, endpoint: str, ca_certificate: str) -> str:
    """A kubeconfig for a GKE cluster at `endpoint` (an IP or host) with its base64 CA certificate."""
    return _kubeconfig(name, f"https://{endpoint}", ca_certificate, {
        "apiVersion": _EXEC_API,
        "command": "gke-gcloud-auth-plugin",
        "installHint": "Install gke-gcloud-auth-plugin: gcloud components install gke-gcloud-auth-plugin "
                       "(https://cloud.google.com/kubernetes-engine/docs/how-to/cluster-access-for-kubectl)",
        "provideClusterInfo": True,
        "interactiveMode": "Never",
    })


def eks_kubeconfig(name: str, region: str, endpoint: str, ca_certificate: str) -> str:
    """A kubeconfig for the EKS cluster `name` in `region`, served at `endpoint` (an https URL)."""
    return _kubeconfig(name, endpoint, ca_certificate, {
        "apiVersion": _EXEC_API,
        "command": "aws",
        "args": ["--region", region, "eks", "get-token", "--cluster-name", name, "--output", "json"],
        "installHint": "Install the AWS CLI v2 (https://docs.aws.amazon.com/cli/latest/userguide/"
                       "getting-started-install.html) and configure credentials for this account",
        "interactiveMode": "Never",
    })


def nebius_kubeconfig(name: str, endpoint: str, ca_certificate_pem: str) -> str:
    """A kubeconfig for a Nebius mk8s cluster at `endpoint` (a host) with its PEM CA certificate."""
    return _kubeconfig(name, f"https://{endpoint}", base64.b64encode(ca_certificate_pem.encode()).decode(), {
        "apiVersion": _EXEC_API,
        "command": "nebius",
        "args": ["mk8s", "v1", "cluster", "get-token", "--format", "json"],
        "installHint": "Install the Nebius CLI (https://docs.nebius.com/cli/install) and sign in with a profile "
                       "for this project",
        "interactiveMode": "Never",
    })


def decoded_kubeconfig(cluster: str, encoded: str) -> str:
    """The kubeconfig a cloud returns base64-encoded (AKS credentials, Vultr's `kube_config`)."""
    try:
        return base64.b64decode(encoded, validate=True).decode()
    except (binascii.Error, UnicodeDecodeError) as error:
        raise ValueError(f"cluster {cluster}: the cloud returned a kubeconfig that is not base64 text ({error})") from None


def _kubeconfig(name: str, server: str, ca_certificate: str, exec_: dict[str, Any]) -> str:
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": name, "cluster": {"server": server, "certificate-authority-data": ca_certificate}}],
        "users": [{"name": name, "user": {"exec": exec_}}],
        "contexts": [{"name": name, "context": {"cluster": name, "user": name}}],
        "current-context": name,
        "preferences": {},
    }
    return json.dumps(config, indent=2, sort_keys=True)
