"""The secured fleet gateway on a real kube-apiserver 1.34: `modelplane plan --render` of the
qwen-demo fleet with `tls` and `auth` on its InferenceGateway writes an HTTPS Gateway restricted to
the services' namespaces and an Envoy Gateway SecurityPolicy; the API server (with the published
Gateway API v1.5.1 and Envoy Gateway v1.7.0 CRDs of tests/data/crds) accepts every object, in a
server-side dry run and for real, and keeps the fields as written."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
import yaml

from tests.e2e.conftest import ROOT, kubectl
from tests.e2e.servers import Fleet
from tests.e2e.test_server_side_validation import apply, delete

pytestmark = pytest.mark.e2e

EXAMPLE = ROOT / "examples" / "qwen-demo"
SECURED = ("  cluster: starter\n  port: 443\n  tls: {certificateSecret: fleet-cert}\n"
           "  auth: {apiKeysSecret: fleet-keys}\n")


def test_the_secured_gateway_objects_are_accepted_as_written(fleet: Fleet, tools: Path, tmp_path: Path) -> None:
    for path in EXAMPLE.glob("*.yaml"):
        (tmp_path / path.name).write_text(path.read_text().replace("  cluster: starter\n", SECURED))
    rendered = subprocess.run([str(ROOT / ".venv" / "bin" / "modelplane"), "plan", str(tmp_path), "--render",
                               str(tmp_path / "out")], capture_output=True, text=True, timeout=300)
    assert rendered.returncode == 0, rendered.stderr
    objects = [yaml.safe_load(p.read_text()) for p in sorted((tmp_path / "out" / "_gateway").rglob("*.yaml"))]
    assert {o["kind"] for o in objects} == {"Gateway", "SecurityPolicy", "HTTPRoute", "Backend"}
    server = next(iter(fleet.clusters.values()))
    namespaces = [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
                  for name in sorted({o["metadata"]["namespace"] for o in objects})]
    apply(tools, server, namespaces)
    try:
        apply(tools, server, objects, "--dry-run=server")
        apply(tools, server, objects)
        stored, gateway = (json.loads(kubectl(tools, server, "get", "-n", "modelplane-system", resource, "fleet",
                                              "-o", "json").stdout)
                           for resource in ("securitypolicies.gateway.envoyproxy.io", "gateways.gateway.networking.k8s.io"))
        assert stored["spec"]["apiKeyAuth"]["credentialRefs"] == [{"group": "", "kind": "Secret", "name": "fleet-keys"}]
        listener = gateway["spec"]["listeners"][0]
        assert (listener["protocol"], listener["tls"]["certificateRefs"][0]["name"],
                listener["allowedRoutes"]["namespaces"]["from"]) == ("HTTPS", "fleet-cert", "Selector")
    finally:
        delete(tools, server, objects)
        delete(tools, server, namespaces)
