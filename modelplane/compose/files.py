"""Rendered manifests as YAML files for people to review (`modelplane plan --render DIR`).

Layout, one object per file so a review diff names what changed:

    <cluster>/<namespace>/<kind>-<name>.yaml     a namespaced object on a workload cluster
    <cluster>/_cluster/<kind>-<name>.yaml        a cluster-scoped object (Namespace, ...)
    <cluster>/_stack.yaml                        the cluster's serving stack, in install order
    _gateway/...                                 the fleet gateway's objects, laid out the same way
    _gateway/_endpoints.yaml                     the ModelEndpoint of every placed replica

Text is `yaml.safe_dump(..., sort_keys=True)`, so the same objects always give the same bytes.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import yaml

GATEWAY_DIR = "_gateway"


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
        assert path not in files, f"two manifests render to {path}"
        files[path] = dump(manifest)
    return files
