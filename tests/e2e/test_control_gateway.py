"""The fleet gateway on the control cluster, on real engines: an InferenceGateway in upstream's form (no
`spec.cluster`, `backend: Traefik`, MetalLB) read from the control cluster lands its Gateway there.

`east` is the control cluster (the generated CRDs, tests/e2e/control_cluster's objects with the gateway
rewritten to upstream's form, `west`'s kubeconfig Secret); `west` the only workload cluster. The real
program runs in control-cluster mode through the real Pulumi engine with `servingStack: false` (no
chart is installed; `metallb-system` is created beforehand, as a cluster that runs MetalLB has it) and
`skipAwait: true`, with tests/e2e/test_pulumi_engine.py's stand-in writing every Gateway's address.
Assertions read the API servers and the stack's outputs.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.conftest import ROOT, kubectl
from modelplane.local.project import Project
from modelplane.local.servers import Cluster, Fleet
from tests.e2e.gateways import gateway_addresses

MANIFESTS = ROOT / "tests" / "e2e" / "control_cluster"
MODELPLANE = str(ROOT / ".venv" / "bin" / "modelplane")
UPSTREAM = ("spec:\n  backend: Traefik\n  traefik:\n    loadBalancer: MetalLB\n"
            "    metallb: {addressPool: 172.18.255.200-172.18.255.250}\n")
ADDRESS = "fleet.modelplane-system.east.e2e.modelplane.test"
"""What the stand-in gives the fleet Gateway on east."""


@dataclass
class Control:
    project: Project
    fleet: Fleet
    tools: Path

    def on(self, cluster: str, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
        return kubectl(self.tools, self.fleet.clusters[cluster], *args, stdin=stdin)

    def get(self, cluster: str, *args: str) -> dict[str, Any]:
        return json.loads(self.on(cluster, "get", *args, "-o", "json").stdout)


@pytest.fixture(scope="module")
def control(fleet: Fleet, tools: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Control]:
    project = Project.create(tmp_path_factory.mktemp("control-gateway"), tools)
    east: Cluster = fleet.clusters["east"]
    project.read_from(east)
    project.config("modelplane:kubeconfigSecrets[0]", "west-kubeconfig", path=True)
    project.brownfield()
    with gateway_addresses(fleet.clusters):
        yield Control(project, fleet, tools)


def test_1_the_platform_applies_upstreams_gateway_to_the_control_cluster(control: Control) -> None:
    crds = subprocess.run([MODELPLANE, "crds"], capture_output=True, text=True, timeout=120, check=True).stdout
    control.on("east", "apply", "--server-side", "-f", "-", stdin=crds)
    control.on("east", "wait", "--for=condition=Established", "crd", "-l", "app.kubernetes.io/part-of=modelplane",
               "--timeout=60s")
    for namespace in ("ml-team", "modelplane-system", "metallb-system"):
        control.on("east", "create", "namespace", namespace)
    control.on("east", "-n", "modelplane-system", "create", "secret", "generic", "west-kubeconfig",
               f"--from-file=kubeconfig={control.fleet.clusters['west'].kubeconfig_file}")
    platform = (MANIFESTS / "platform.yaml").read_text()
    assert "spec:\n  cluster: west\n" in platform
    control.on("east", "apply", "-f", "-", stdin=platform.replace("spec:\n  cluster: west\n", UPSTREAM))
    control.on("east", "apply", "-f", str(MANIFESTS / "models.yaml"))
    assert "cluster" not in control.get("east", "ig", "default")["spec"]


def test_2_up_lands_the_fleet_gateway_and_routes_on_the_control_cluster(control: Control) -> None:
    control.project.up()
    gateway = control.get("east", "gateways.gateway.networking.k8s.io", "fleet", "-n", "modelplane-system")
    assert gateway["spec"]["gatewayClassName"] == "traefik"
    assert control.get("east", "gatewayclasses.gateway.networking.k8s.io", "traefik")["spec"]["controllerName"] == (
        "traefik.io/gateway-controller")
    pool = control.get("east", "ipaddresspools.metallb.io", "modelplane", "-n", "metallb-system")
    assert pool["spec"]["addresses"] == ["172.18.255.200-172.18.255.250"]
    route = control.get("east", "httproutes.gateway.networking.k8s.io", "chat", "-n", "ml-team")
    assert route["spec"]["parentRefs"][0]["name"] == "fleet"
    endpoints = control.get("east", "endpointslices.discovery.k8s.io", "chat-gateway-west", "-n", "ml-team")
    assert endpoints["endpoints"][0]["addresses"] == ["inference.modelplane-system.west.e2e.modelplane.test"]
    west = control.get("west", "gateways.gateway.networking.k8s.io", "-n", "modelplane-system")
    assert [g["metadata"]["name"] for g in west["items"]] == ["inference"], "no fleet gateway on the workload cluster"


def test_3_its_address_is_the_stack_output_and_the_gateways_status(control: Control) -> None:
    outputs = json.loads(control.project.run("stack", "output", "--json").stdout)
    assert outputs["gatewayAddress"] == ADDRESS
    assert control.get("east", "ig", "default")["status"] == {"address": ADDRESS}
    assert control.get("east", "ms", "chat", "-n", "ml-team")["status"]["url"] == f"http://{ADDRESS}/ml-team/chat/"


def test_4_destroy_leaves_the_control_planes_and_teams_namespaces(control: Control) -> None:
    control.project.run("destroy", "--yes")
    for namespace in ("ml-team", "modelplane-system"):
        assert control.get("east", "namespace", namespace)["status"]["phase"] == "Active"
    assert control.get("east", "md", "chat", "-n", "ml-team")["metadata"]["name"] == "chat"
