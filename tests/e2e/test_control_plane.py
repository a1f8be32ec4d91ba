"""Always-on, on real engines: the modelplane CRDs on a real kube-apiserver, kubectl as ML teams use it,
and the real program in control-cluster mode through the real Pulumi engine.

`east` is the control cluster: the generated CRDs, the objects (tests/e2e/control_cluster) applied
with kubectl, the kubeconfig Secret of `west`, the only workload cluster. The stack reads the objects
from `east` (`modelplane:source: cluster`, its kubeconfig as secret config), deploys to `west`
(`servingStack: false`, `skipAwait: true`, as tests/e2e/test_pulumi_engine.py explains, with its
stand-in for the Gateway controller) and writes the status back to `east`. The Pulumi Kubernetes
Operator's and KEDA's CRDs are installed by the suite (tests/data/crds), so their objects apply; their
controllers cannot run here (no nodes, no images), so nothing acts on them.

The tests are the scenario's steps, in order. Assertions read the API servers (kubectl, the official
client) and the engine's JSON, never our own logs.
"""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from modelplane.api.crds import SERVED_KINDS
from modelplane.api.crds.rules import RULES
from tests.api.test_crds import BAD
from tests.e2e.conftest import ROOT, kubectl
from modelplane.local.project import Project, PulumiFailed
from modelplane.local.servers import Cluster, Fleet
from tests.e2e.gateways import gateway_addresses
from tests.e2e.reads import objects, versions

MANIFESTS = ROOT / "tests" / "e2e" / "control_cluster"
MODELPLANE = str(ROOT / ".venv" / "bin" / "modelplane")
NS = "ml-team"
STATUS_TYPE = "pulumi-python:dynamic/modelplane:Status"
TYPO = """apiVersion: modelplane.ai/v1alpha1
kind: ModelDeployment
metadata: {name: typo, namespace: ml-team}
spec:
  engines:
  - name: typo
    members:
    - nodeSelector:
        devices:
        - name: gpu
          selectors:
          - cel: device.capacity["gpu.nvidia.com"].memory >= quantity("70Gi")
      template:
        spec:
          containers: [{name: engine, image: vllm/vllm-openai:v0.23.0}]
"""


@dataclass
class Control:
    project: Project
    fleet: Fleet
    tools: Path
    timings: dict[str, float]

    @property
    def east(self) -> Cluster:
        return self.fleet.clusters["east"]

    @property
    def west(self) -> Cluster:
        return self.fleet.clusters["west"]

    def kubectl(self, *args: str, stdin: str | None = None, check: bool = True) -> subprocess.CompletedProcess[str]:
        return kubectl(self.tools, self.east, *args, stdin=stdin, check=check)

    def explain(self, field: str, seconds: float = 60.0) -> str:
        """`kubectl explain FIELD`, once the API server publishes the CRD's OpenAPI (a CRD is
        Established before its schema reaches /openapi/v3, and under load that lags by seconds)."""
        deadline = time.monotonic() + seconds
        while (done := self.kubectl("explain", field, check=False)).returncode != 0 and time.monotonic() < deadline:
            time.sleep(1)
        assert done.returncode == 0, f"kubectl explain {field}: {done.stderr}"
        return done.stdout

    def get(self, kind: str, name: str, namespace: str | None = NS) -> dict[str, Any]:
        scope = ["-n", namespace] if namespace else []
        return json.loads(self.kubectl("get", kind, name, *scope, "-o", "json").stdout)

    def up(self, label: str) -> list[dict[str, Any]]:
        started = time.monotonic()
        events = self.project.up()
        self.timings[label] = time.monotonic() - started
        return events


@pytest.fixture(scope="module")
def control(fleet: Fleet, tools: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Control]:
    project = Project.create(tmp_path_factory.mktemp("control-stack"), tools)
    east = fleet.clusters["east"]
    project.read_from(east)
    project.config("modelplane:kubeconfigSecrets[0]", "west-kubeconfig", path=True)
    project.brownfield()
    timings: dict[str, float] = {}
    with gateway_addresses(fleet.clusters):
        try:
            yield Control(project, fleet, tools, timings)
        finally:
            print("\ntimings (s):", json.dumps({k: round(v, 1) for k, v in timings.items()}))


def modelplane(*args: str) -> subprocess.CompletedProcess[str]:
    done = subprocess.run([MODELPLANE, *args], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done


def test_1_the_generated_crds_are_accepted_and_explained(control: Control) -> None:
    crds = modelplane("crds").stdout
    control.kubectl("apply", "--server-side", "-f", "-", stdin=crds)
    control.kubectl("wait", "--for=condition=Established", "crd", "-l", "app.kubernetes.io/part-of=modelplane",
                    "--timeout=60s")
    explained = control.explain("modeldeployment.spec.engines")
    assert "copies\t<integer>" in explained and "How many identical copies of this engine to run per" in explained
    names = control.kubectl("api-resources", "--api-group=modelplane.ai", "-o", "name").stdout.split()
    assert sorted(names) == sorted(f"{plural}.modelplane.ai" for plural in (
        "inferenceclasses", "inferenceclusters", "inferencegateways", "modeldeployments", "modelcaches",
        "modelservices", "modelendpoints"))


def test_2_every_example_is_accepted_and_schema_level_mistakes_are_refused(control: Control) -> None:
    for namespace in (NS, "ml-team-research", "modelplane-system"):
        control.kubectl("create", "namespace", namespace)
    for example in sorted(p for p in (ROOT / "examples").iterdir() if any(p.rglob("*.yaml"))):
        documents = [d for path in sorted(example.rglob("*.yaml")) for d in yaml.safe_load_all(path.read_text())
                     if isinstance(d, dict) and str(d.get("apiVersion", "")).startswith("modelplane.ai/")]
        done = control.kubectl("apply", "--dry-run=server", "-f", "-", stdin=yaml.safe_dump_all(documents))
        assert done.stdout.count("(server dry run)") == len(documents), example.name
    messages = [rule.message for rules in RULES.values() for rule in rules]
    messages += [rule.message for served in SERVED_KINDS for rule in served.name_rules]
    for case in BAD:
        obj = json.loads(json.dumps(case.base))
        case.change(obj)
        refused = control.kubectl("apply", "--dry-run=server", "-f", "-", stdin=yaml.safe_dump(obj), check=False)
        assert refused.returncode != 0, case.name
        if any(case.schema_says in message for message in messages):  # a CEL rule: the server says its message
            assert case.schema_says in refused.stderr, (case.name, refused.stderr)


def test_3_the_platform_and_an_ml_team_apply_with_kubectl_and_scale(control: Control) -> None:
    control.kubectl("-n", "modelplane-system", "create", "secret", "generic", "west-kubeconfig",
                    f"--from-file=kubeconfig={control.west.kubeconfig_file}")
    control.kubectl("apply", "-f", str(MANIFESTS / "platform.yaml"), "-f", str(MANIFESTS / "models.yaml"))
    control.kubectl("-n", NS, "scale", "modeldeployment/chat", "--replicas", "2")
    chat = control.get("md", "chat")
    assert (chat["spec"]["replicas"], chat["metadata"]["generation"], chat.get("status")) == (2, 2, None)


def test_4_preview_reads_the_control_cluster_and_writes_nothing(control: Control) -> None:
    preview, _ = control.project.preview()
    placement = next(s for s in preview["steps"] if s["urn"].endswith("::modelplane-placement"))
    known = json.loads(placement["newState"]["inputs"]["placement"])  # the document as one JSON text
    assert [(r["cluster"], r["index"]) for r in known["replicas"]] == [("west", 0), ("west", 1)]
    assert any(s["urn"].endswith("::modelplane-status") and s["op"] == "create" for s in preview["steps"])
    assert control.get("md", "chat").get("status") is None, "a preview writes nothing"
    assert objects(control.west, "Deployment") == {}


def test_5_up_deploys_the_replicas_and_writes_status_that_kubectl_shows(control: Control) -> None:
    control.up("first up")
    assert set(objects(control.west, "Deployment")) == {"chat-west-0-chat", "chat-west-1-chat"}
    table = control.kubectl("-n", NS, "get", "md").stdout.split("\n")
    assert table[0].split() == ["NAME", "READY", "CLUSTERS", "AGE"] and table[1].split()[:3] == ["chat", "2/2", "west"]
    status = control.get("md", "chat")["status"]
    assert (status["replicas"], status["desiredReplicas"], status["observedGeneration"]) == (2, 2, 2)
    assert {c["type"]: c["status"] for c in status["conditions"]} == {"Scheduled": "True", "Ready": "True"}
    scale = json.loads(control.kubectl("get", "--raw", f"/apis/modelplane.ai/v1alpha1/namespaces/{NS}/"
                                                       "modeldeployments/chat/scale").stdout)
    assert scale["spec"]["replicas"] == 2 and scale["status"]["replicas"] == 2
    assert scale["status"]["selector"] == ("app.kubernetes.io/managed-by=modelplane,modelplane.ai/deployment=chat,"
                                           "modelplane.ai/serving=true"), "what the HPA behind KEDA requires"
    gateway = "fleet.modelplane-system.west.e2e.modelplane.test"
    assert control.get("ms", "chat")["status"]["url"] == f"http://{gateway}/ml-team/chat/"
    assert control.get("ig", "default", None)["status"] == {"address": gateway}


def test_6_kubectl_scale_adds_one_replica_and_moves_nothing(control: Control) -> None:
    before = versions(control.west)
    control.kubectl("-n", NS, "scale", "md/chat", "--replicas", "3")
    control.up("scale up")
    after = versions(control.west)
    assert {k: v for k, v in after.items() if k in before} == before, "existing replicas are untouched"
    assert set(after) - set(before) == {"Deployment/chat-west-2-chat"}
    status = control.get("md", "chat")["status"]
    assert (status["ready"], status["observedGeneration"]) == ("3/3", 3)


def test_7_refresh_finds_the_status_as_written_and_a_rerun_changes_nothing(control: Control) -> None:
    control.project.run("refresh", "--yes", "--expect-no-changes")
    control.project.run("preview", "--expect-no-changes")


def test_8_an_invalid_object_is_skipped_with_its_reason_in_status_or_fails_strict_mode(control: Control) -> None:
    control.kubectl("apply", "-f", "-", stdin=TYPO)
    preview, _ = control.project.preview()
    warnings = [d["message"] for d in preview.get("diagnostics", []) if d.get("severity") == "warning"]
    assert any("control cluster: warning: ModelDeployment ml-team/typo: skipped" in w for w in warnings), warnings
    control.up("with a skipped object")
    typo = control.get("md", "typo")["status"]
    assert {(c["type"], c["status"], c["reason"]) for c in typo["conditions"]} == {
        ("Scheduled", "False", "InvalidSpec"), ("Ready", "False", "InvalidSpec")}
    assert "compareTo" in typo["conditions"][0]["message"]
    assert control.get("md", "chat")["status"]["ready"] == "3/3", "the rest of the fleet converges"
    control.project.config("modelplane:strict", "true")
    with pytest.raises(PulumiFailed, match="error\\(s\\) in the control cluster's objects"):
        control.project.preview()
    control.project.config("modelplane:strict", "false")
    control.kubectl("-n", NS, "delete", "md", "typo")


def test_9_the_operators_stack_and_a_keda_scaled_object_apply_and_reconcile_asks_for_a_run(
        control: Control, tmp_path: Path) -> None:
    modelplane("control-plane", "--render", str(tmp_path), "--stack", "e2e", "--image",
               "registry.example/modelplane-workspace:0.1.0", "--backend", "s3://e2e-state", "--env",
               "PULUMI_CONFIG_PASSPHRASE", "--kubeconfig-secret", "west-kubeconfig")
    control.kubectl("apply", "--server-side", "--force-conflicts", "-f", str(tmp_path))
    stack = control.get("stack", "modelplane-e2e", "modelplane-system")
    assert (stack["spec"]["resyncFrequencySeconds"], stack["spec"]["continueResyncOnCommitMatch"]) == (60, True)
    workspace = "--as=system:serviceaccount:modelplane-system:modelplane-e2e-workspace"
    for verb, resource, extra, allowed in (("list", "modeldeployments.modelplane.ai", [], "yes"),
                                           ("patch", "modeldeployments.modelplane.ai", ["--subresource=status"], "yes"),
                                           ("patch", "modeldeployments.modelplane.ai", [], "no"),
                                           ("get", "secrets/west-kubeconfig", ["-n", "modelplane-system"], "yes"),
                                           ("get", "secrets/modelplane-pulumi", ["-n", "modelplane-system"], "no"),
                                           ("list", "secrets", ["-n", "modelplane-system"], "no"),
                                           ("get", "secrets", [], "no")):
        answer = control.kubectl("auth", "can-i", verb, resource, "-n", NS, *extra, workspace, check=False)
        assert answer.stdout.strip() == allowed, (verb, resource, extra)
    scaled_object = (tmp_path / "example" / "scaledobject.yaml").read_text().replace("qwen3-8b", "chat")
    control.kubectl("apply", "-f", "-", stdin=scaled_object)
    assert control.get("scaledobject", "chat")["spec"]["scaleTargetRef"]["kind"] == "ModelDeployment"
    modelplane("reconcile", "--stack", "e2e", "--kubeconfig", str(control.east.kubeconfig_file))
    annotations = control.get("stack", "modelplane-e2e", "modelplane-system")["metadata"]["annotations"]
    assert annotations["pulumi.com/reconciliation-request"].endswith("Z")
    # The split layout: a fleet Stack and one per workload cluster, accepted by PKO's CRD; --all runs them all.
    modelplane("control-plane", "--render", str(tmp_path / "split"), "--stack", "split", "--cluster", "east",
               "--cluster", "west")
    control.kubectl("apply", "--server-side", "-f", str(tmp_path / "split" / "3-stack.yaml"))
    modelplane("reconcile", "--all", "--kubeconfig", str(control.east.kubeconfig_file))
    for name in ("modelplane-e2e", "modelplane-split", "modelplane-split-east", "modelplane-split-west"):
        annotations = control.get("stack", name, "modelplane-system")["metadata"]["annotations"]
        assert annotations["pulumi.com/reconciliation-request"].endswith("Z"), name


def test_10_state_keeps_kubeconfigs_encrypted_and_destroy_leaves_the_statuses(control: Control) -> None:
    exported = control.project.export()
    for token in (control.east.token, control.west.token):
        assert token not in exported
    status = next(r for r in json.loads(exported)["deployment"]["resources"] if r["type"] == STATUS_TYPE)
    assert "ciphertext" in json.dumps(status["outputs"]["kubeconfig"])
    control.project.run("destroy", "--yes")
    assert objects(control.west, "Deployment") == {}
    assert control.get("md", "chat")["status"]["ready"] == "3/3", "delete writes nothing"
