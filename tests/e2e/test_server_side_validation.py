"""Every object compose emits, accepted by a real kube-apiserver 1.34 with the published CRDs.

The manifest sets: every example folder, the getting-started tour with all its stages (the fleet
gateway on Traefik), and the tour with that gateway on MetalLB (`loadBalancer: MetalLB`, an
address pool), so both gateway backends' objects, Traefik's GatewayClass and routes with
per-backend rewrites, and MetalLB's IPAddressPool and L2Advertisement, meet the real API server.
For each set, `modelplane plan --render DIR` (the CLI, as a user runs it) writes every
cluster's manifests; each cluster's objects, its serving stack's own objects (listed in
`_inventory/stacks/<cluster>.yaml`) and
the fleet gateway's objects go to one of the two API servers (clusters in name order, alternately;
the gateway's with its cluster). Namespaces are created first; then the objects are applied with
`kubectl apply --dry-run=server` and then for real, server-side, and then once more under a second
field manager without `--force-conflicts`: what the kubernetes provider sends when a run killed
after its create reached the API server is followed by the next run's create (a field manager per
create, `pulumi-kubernetes-<random>`). That apply must meet no conflict, so every value the API
server defaults inside an atomic list or struct is rendered (the invariant of `modelplane.compose`;
before it was, HTTPRoute `.spec.rules`, ResourceClaimTemplate `.spec.spec.devices.requests`,
SecurityPolicy `.spec.apiKeyAuth.credentialRefs` and env `valueFrom.fieldRef` conflicted). The objects
are deleted again (namespaces last, waiting until they are gone), so batches that share a server never
see each other's objects. A rejection or a conflict fails with the API server's words.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
import yaml

from modelplane.api import load
from tests.e2e.conftest import ROOT, kubectl
from modelplane.local.servers import Cluster, Fleet

EXAMPLES = sorted(path for path in (ROOT / "examples").iterdir() if any(path.glob("*.yaml")))
TOUR = ROOT / "examples" / "getting-started"
STAGES = sorted(path for path in TOUR.iterdir() if path.is_dir())
INVENTORY = "_inventory"
GATEWAY_ON_METALLB = ('  traefik:\n    version: "40.2.0"\n',
                      '  traefik:\n    version: "40.2.0"\n    loadBalancer: MetalLB\n'
                      '    metallb: {addressPool: 192.0.2.240-192.0.2.250}\n')


def tour_on_metallb(directory: Path) -> list[Path]:
    """A copy of the tour's stages whose gateway asks for MetalLB (a TEST-NET-1 pool: never routed)."""
    copies = []
    for stage in STAGES:
        target = directory / stage.name
        target.mkdir(parents=True)
        for file in stage.glob("*.yaml"):
            text = file.read_text()
            if GATEWAY_ON_METALLB[0] in text:
                text = text.replace(*GATEWAY_ON_METALLB)
            (target / file.name).write_text(text)
        copies.append(target)
    assert any(GATEWAY_ON_METALLB[1] in f.read_text() for c in copies for f in c.glob("*.yaml"))
    return copies


SETS = {**{path.name: (lambda _, path=path: [path]) for path in EXAMPLES},
        "getting-started": lambda _: STAGES, "getting-started-metallb": tour_on_metallb}


def rendered_objects(rendered: Path, folder: str) -> list[dict]:
    """The objects of one rendered cluster folder (or `_gateway`), with the objects of that
    cluster's serving stack that are installed as plain objects (`_inventory/stacks/<cluster>.yaml`)."""
    objects = [yaml.safe_load(path.read_text()) for path in sorted((rendered / folder).rglob("*.yaml"))]
    stack = rendered / INVENTORY / "stacks" / f"{folder}.yaml"
    if stack.exists():
        for addon in yaml.safe_load_all(stack.read_text()):
            objects.extend(addon.get("objects", []))
    return objects


def rendered_clusters(rendered: Path) -> list[str]:
    """Every cluster the render wrote something for: a folder of objects, a serving stack, or both."""
    folders = {path.name for path in rendered.iterdir() if path.is_dir() and path.name not in ("_gateway", INVENTORY)}
    stacks = {path.stem for path in (rendered / INVENTORY / "stacks").glob("*.yaml")}
    return sorted(folders | stacks)


def apply(tools: Path, cluster: Cluster, objects: list[dict], *flags: str, manager: str = "e2e") -> None:
    kubectl(tools, cluster, "apply", "--server-side", f"--field-manager={manager}", *flags, "-f", "-",
            stdin=yaml.safe_dump_all(objects, sort_keys=True))


def delete(tools: Path, cluster: Cluster, objects: list[dict]) -> None:
    kubectl(tools, cluster, "delete", "--ignore-not-found", "--wait=true", "--timeout=120s", "-f", "-",
            stdin=yaml.safe_dump_all(objects, sort_keys=True))


@pytest.mark.parametrize("name", sorted(SETS))
def test_every_rendered_object_is_accepted_by_the_api_server(name: str, fleet: Fleet, tools: Path,
                                                              tmp_path: Path) -> None:
    paths = SETS[name](tmp_path / "manifests")
    rendered_dir = tmp_path / "rendered"
    rendered = subprocess.run([str(ROOT / ".venv" / "bin" / "modelplane"), "plan", *map(str, paths),
                               "--render", str(rendered_dir)], capture_output=True, text=True, timeout=300)
    assert rendered.returncode == 0, rendered.stderr
    servers = list(fleet.clusters.values())
    clusters = rendered_clusters(rendered_dir)
    assert clusters, f"{name} rendered no cluster"
    target = {cluster: servers[index % len(servers)] for index, cluster in enumerate(clusters)}
    batches = [(target[cluster], rendered_objects(rendered_dir, cluster)) for cluster in clusters]
    gateway = load(paths).fleet.gateway
    if gateway is not None:
        batches.append((target[gateway.spec.cluster], rendered_objects(rendered_dir, "_gateway")))
    applied = 0
    for server, objects in batches:
        namespaces = [o for o in objects if o["kind"] == "Namespace"]
        needed = sorted({o["metadata"]["namespace"] for o in objects if o["metadata"].get("namespace")}
                        - {o["metadata"]["name"] for o in namespaces})
        namespaces += [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}} for name in needed]
        apply(tools, server, namespaces)
        rest = [o for o in objects if o["kind"] != "Namespace"]
        apply(tools, server, rest, "--dry-run=server")
        apply(tools, server, rest)
        apply(tools, server, rest, manager="restarted-create")
        applied += len(objects)
        delete(tools, server, rest)
        delete(tools, server, namespaces)
    assert applied > 0
    kinds = {(o["apiVersion"], o["kind"]) for _, objects in batches for o in objects}
    assert {("gateway.networking.k8s.io/v1", "GatewayClass"), ("gateway.networking.k8s.io/v1", "Gateway")} <= kinds, \
        "each cluster's serving-stack objects are part of what is checked"
    if name == "getting-started-metallb":
        assert {("metallb.io/v1beta1", "IPAddressPool"), ("metallb.io/v1beta1", "L2Advertisement")} <= kinds, kinds
