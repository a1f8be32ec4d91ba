"""Rendered manifests as YAML files for people to review (`modelplane plan --render DIR`).

Layout, one object per file so a review diff names what changed, and every folder but
`_inventory` holds only Kubernetes objects (`kubectl apply -R -f DIR/<cluster>` applies one
cluster's workloads, `DIR/_gateway` the fleet gateway's objects on the InferenceGateway's cluster):

    <cluster>/<namespace>/<kind>-<name>.yaml     a namespaced object on a workload cluster
    <cluster>/_cluster/<kind>-<name>.yaml        a cluster-scoped object (Namespace, ...)
    _gateway/...                                 the fleet gateway's objects, laid out the same way
    _inventory/stacks/<cluster>.yaml             the cluster's serving stack (add-ons), in install order
    _inventory/stacks/_control.yaml              the control cluster's, when the fleet gateway runs there
    _inventory/endpoints.yaml                    the ModelEndpoint of every placed replica

A Secret whose value the Pulumi program fills in from stack config is written without that
value (a placeholder would be applied as the token), under a comment naming the config key.
Text is `yaml.safe_dump(..., sort_keys=True)`, so the same objects always give the same bytes.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import yaml

from modelplane.compose.cache import secret_placeholder
from modelplane.invariants import InvariantError

GATEWAY_DIR = "_gateway"
INVENTORY_DIR = "_inventory"


class _Dumper(yaml.SafeDumper):
    """Writes a value that appears twice in full both times: no `&id001` anchors in a review."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def _text(dumper: yaml.SafeDumper, data: str) -> yaml.ScalarNode:
    """Multi-line strings (scripts, embedded configs) as `|` blocks, readable as written."""
    style = "|" if "\n" in data else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", data, style=style)


_Dumper.add_representer(str, _text)


def dump(data: Any) -> str:
    return yaml.dump(data, Dumper=_Dumper, sort_keys=True, default_flow_style=False, allow_unicode=True, width=120)


def dump_all(documents: Iterable[Any]) -> str:
    return yaml.dump_all(list(documents), Dumper=_Dumper, sort_keys=True, default_flow_style=False,
                         allow_unicode=True, width=120, explicit_start=True)


def object_path(directory: str, manifest: dict) -> str:
    metadata = manifest["metadata"]
    scope = metadata.get("namespace") or "_cluster"
    return f"{directory}/{scope}/{manifest['kind'].lower()}-{metadata['name']}.yaml"


def object_files(directory: str, manifests: Iterable[dict]) -> dict[str, str]:
    files: dict[str, str] = {}
    for manifest in manifests:
        path = object_path(directory, manifest)
        if path in files:
            raise InvariantError(f"two manifests render to {path}")
        files[path] = _secret_file(manifest) if manifest["kind"] == "Secret" else dump(manifest)
    return files


def _secret_file(secret: dict) -> str:
    """The Secret without the values Pulumi fills in, and a comment per value saying where it comes from."""
    metadata, values = secret["metadata"], secret.get("stringData", {})
    configured = sorted(key for key, value in values.items()
                        if value == secret_placeholder(metadata["namespace"], metadata["name"], key))
    if not configured:
        return dump(secret)
    kept = {key: value for key, value in values.items() if key not in configured}
    notes = [f"# {key}: filled in by `pulumi up` from stack config modelplane:secrets.{metadata['namespace']}."
             f"{metadata['name']}.{key}; applying this file by hand, create it first: kubectl -n "
             f"{metadata['namespace']} create secret generic {metadata['name']} --from-literal={key}=..."
             for key in configured]
    body = {k: v for k, v in secret.items() if k != "stringData"} | ({"stringData": kept} if kept else {})
    return "\n".join(notes) + "\n" + dump(body)
