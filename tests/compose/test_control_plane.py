"""The control cluster's manifests (`compose.control_plane`): every one valid against its schema (the
operator's Stack CRD v2.9.0, KEDA's ScaledObject CRD v2.20.2, Kubernetes 1.34), the Stack as the
issue asks for it, the workspace allowed exactly what the program does there, and the files
`modelplane control-plane --render` writes byte-stable, with the example ScaledObject the one
docs/always-on.md shows."""

from __future__ import annotations

from pathlib import Path

import kubernetes_validate
import pytest
import yaml

from modelplane.api.crds import SERVED_KINDS, custom_resource_definitions
from modelplane.cli import main
from modelplane.compose.control_plane import (
    ControlPlaneSettings,
    access,
    control_plane,
    control_plane_files,
    example_scaled_object,
    stack,
    stacks,
)
from tests.compose import schemas

ROOT = Path(__file__).resolve().parents[2]
SETTINGS = ControlPlaneSettings(stack="acme/modelplane/prod", image="registry.example/modelplane-workspace:0.1.0",
                                backend="s3://acme-pulumi-state", env_keys=("PULUMI_CONFIG_PASSPHRASE", "AWS_ACCESS_KEY_ID"),
                                kubeconfig_secrets=("onprem-kubeconfig", "edge-kubeconfig"))


@pytest.mark.parametrize("settings", [ControlPlaneSettings(), SETTINGS], ids=["defaults", "self-managed backend"])
def test_every_manifest_is_valid_against_its_schema(settings: ControlPlaneSettings) -> None:
    for manifest in [*control_plane(settings), example_scaled_object()]:
        if manifest["kind"] == "CustomResourceDefinition":
            kubernetes_validate.validate(manifest, schemas.KUBERNETES_VERSION, strict=True)
        else:
            assert schemas.problems(manifest) == [], manifest["kind"]


def test_the_stack_runs_this_program_continuously_in_cluster_mode() -> None:
    spec = stack(SETTINGS)["spec"]
    assert stack(SETTINGS)["metadata"] == {"name": "modelplane-prod", "namespace": "modelplane-system",
                                           "labels": {"app.kubernetes.io/part-of": "modelplane"}}
    assert (spec["stack"], spec["backend"], spec["resyncFrequencySeconds"]) == (
        "acme/modelplane/prod", "s3://acme-pulumi-state", 60)
    assert spec["continueResyncOnCommitMatch"] is True and spec["refresh"] is True
    assert spec["config"] == {"modelplane:source": "cluster",
                              "modelplane:kubeconfigSecrets": ["edge-kubeconfig", "onprem-kubeconfig"]}
    assert spec["envRefs"] == {key: {"type": "Secret", "secret": {"name": "modelplane-pulumi", "key": key}}
                               for key in ("AWS_ACCESS_KEY_ID", "PULUMI_CONFIG_PASSPHRASE")}
    assert spec["workspaceTemplate"]["spec"] == {"image": "registry.example/modelplane-workspace:0.1.0",
                                                 "imagePullPolicy": "IfNotPresent",
                                                 "local": {"dir": "/home/pulumi/modelplane"}}
    assert spec["serviceAccountName"] == "modelplane-prod-workspace"
    assert "projectRepo" not in spec and "fluxSource" not in spec and "programRef" not in spec, \
        "the program is baked into the image"


def test_the_dockerfile_puts_the_program_where_the_stack_looks() -> None:
    dockerfile = (ROOT / "Dockerfile").read_text()
    assert f"WORKDIR {ControlPlaneSettings().program_dir}\n" in dockerfile


@pytest.mark.parametrize("wrong,message", [
    ({"resync_seconds": 30}, "below the operator's minimum of 60"),
    ({"env_keys": ()}, "env_keys names no key"),
])
def test_settings_the_operator_would_not_honour_are_refused(wrong: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        ControlPlaneSettings(**wrong)


def test_stack_object_names_fit_the_operators_limit() -> None:
    assert ControlPlaneSettings(stack="org/project/" + "x" * 80).stack_resource.__len__() <= 42


def test_the_workspace_may_read_every_kind_write_status_and_read_kubeconfig_secrets_only() -> None:
    by_kind = {(m["kind"], m["metadata"]["name"]): m for m in access(SETTINGS)}
    account = "modelplane-prod-workspace"
    role = by_kind[("ClusterRole", account)]["rules"]
    assert role[0] == {"apiGroups": ["modelplane.ai"], "resources": [s.plural for s in SERVED_KINDS],
                       "verbs": ["get", "list", "watch"]}
    assert role[1]["resources"] == [f"{s.plural}/status" for s in SERVED_KINDS if s.status]
    assert role[1]["verbs"] == ["get", "patch"]
    assert by_kind[("Role", account)]["rules"] == [{"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"],
                                                    "resourceNames": ["edge-kubeconfig", "onprem-kubeconfig"]}]
    delegator = by_kind[("ClusterRoleBinding", f"{account}:system:auth-delegator")]
    assert delegator["roleRef"]["name"] == "system:auth-delegator"
    assert delegator["subjects"] == [{"kind": "ServiceAccount", "name": account, "namespace": "modelplane-system"}]


def test_without_kubeconfig_secrets_the_workspace_reads_no_secret() -> None:
    assert not [m for m in access(ControlPlaneSettings()) if m["kind"] in ("Role", "RoleBinding")]


@pytest.mark.parametrize(("secrets", "message"), [
    (("modelplane-pulumi",), "is the operator's own credentials"),
    (("Bad_Name",), "is not a DNS subdomain"),
])
def test_a_kubeconfig_secret_list_that_would_open_too_much_is_refused(secrets: tuple[str, ...], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        ControlPlaneSettings(kubeconfig_secrets=secrets)


def test_the_example_scaled_object_keeps_one_replica_while_the_schema_admits_zero() -> None:
    spec = example_scaled_object()["spec"]
    assert spec["scaleTargetRef"] == {"apiVersion": "modelplane.ai/v1alpha1", "kind": "ModelDeployment",
                                      "name": "qwen3-8b"}
    assert spec["minReplicaCount"] == 1
    trigger = spec["triggers"][0]
    assert trigger["type"] == "prometheus" and "vllm:num_requests_waiting" in trigger["metadata"]["query"]
    deployments = next(c for c in custom_resource_definitions() if c["spec"]["names"]["kind"] == "ModelDeployment")
    replicas = deployments["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["replicas"]
    assert replicas["minimum"] == 0 and "maximum" not in replicas, "minReplicaCount 0 is admitted, no upper bound"


def test_render_writes_byte_stable_files_and_the_guides_scaled_object(tmp_path: Path,
                                                                       capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["control-plane", "--render", str(tmp_path / "a")]) == 0
    assert main(["control-plane", "--render", str(tmp_path / "b")]) == 0
    written = {p.relative_to(tmp_path / "a").as_posix(): p.read_bytes() for p in sorted((tmp_path / "a").rglob("*.yaml"))}
    assert written == {p.relative_to(tmp_path / "b").as_posix(): p.read_bytes()
                       for p in sorted((tmp_path / "b").rglob("*.yaml"))}
    assert sorted(written) == ["1-crds.yaml", "2-access.yaml", "3-stack.yaml", "example/scaledobject.yaml"]
    assert {name: text.encode() for name, text in control_plane_files(ControlPlaneSettings()).items()} == written
    guide = (ROOT / "docs" / "always-on.md").read_text()
    assert "```yaml\n" + written["example/scaledobject.yaml"].decode().removeprefix("---\n") + "```" in guide, \
        "the guide shows the ScaledObject render writes"
    assert [d["kind"] for d in yaml.safe_load_all(written["3-stack.yaml"])] == ["Stack"]
    assert "1-crds.yaml, 2-access.yaml, 3-stack.yaml" in capsys.readouterr().out


def test_render_refuses_a_resync_below_the_operators_minimum(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["control-plane", "--render", str(tmp_path), "--resync", "30"]) == 1
    assert "below the operator's minimum of 60" in capsys.readouterr().err


def test_reconcile_without_a_usable_kubeconfig_says_so(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["reconcile", "--stack", "prod", "--kubeconfig", str(tmp_path / "absent")]) == 1
    assert capsys.readouterr().err == f"the kubeconfig {tmp_path / 'absent'} cannot be read: no such file\n"
    for text, message in [("users: [{name: a, user: {token: s3cr3t}}\n  bad: [\n", "is not YAML (line 2, column 3)"),
                          ("clusters: 5\nusers: [{name: a, user: {token: s3cr3t}}]\n", "is not a kubeconfig: ")]:
        (tmp_path / "broken").write_text(text)
        assert main(["reconcile", "--kubeconfig", str(tmp_path / "broken")]) == 1
        err = capsys.readouterr().err
        assert err.startswith(f"the kubeconfig {tmp_path / 'broken'} {message}") and "s3cr3t" not in err


SPLIT = ControlPlaneSettings(stack="acme/modelplane/prod", clusters=("west", "east"))


def test_the_split_layout_is_valid_against_the_operators_schema() -> None:
    for manifest in stacks(SPLIT):
        assert schemas.problems(manifest) == [], manifest["metadata"]["name"]


def test_the_split_layout_runs_a_fleet_stack_and_one_workload_stack_per_cluster() -> None:
    fleet, east, west = stacks(SPLIT)
    assert [s["metadata"]["name"] for s in (fleet, east, west)] == [
        "modelplane-prod", "modelplane-prod-east", "modelplane-prod-west"]
    assert fleet["spec"]["config"] == {
        "modelplane:source": "cluster", "modelplane:role": "fleet", "modelplane:kubeconfigSecrets": [],
        "modelplane:clusterStacks": {"east": "acme/modelplane/prod-east", "west": "acme/modelplane/prod-west"}}
    assert east["spec"]["stack"] == "acme/modelplane/prod-east"
    assert east["spec"]["config"] == {"modelplane:role": "cluster", "modelplane:cluster": "east",
                                      "modelplane:fleetStack": "acme/modelplane/prod"}
    for workload in (east, west):
        assert "prerequisites" not in workload["spec"], "a prerequisite on the fleet would deadlock the first run"
        same = {k: v for k, v in fleet["spec"].items() if k not in ("stack", "config")}
        assert {k: v for k, v in workload["spec"].items() if k not in ("stack", "config")} == same
    assert stacks(ControlPlaneSettings()) == [stack(ControlPlaneSettings())], "one stack by default"


def test_render_writes_every_stack_of_the_split_layout(tmp_path: Path) -> None:
    assert main(["control-plane", "--render", str(tmp_path), "--stack", "acme/modelplane/prod",
                 "--cluster", "west", "--cluster", "east"]) == 0
    written = list(yaml.safe_load_all((tmp_path / "3-stack.yaml").read_text()))
    assert written == stacks(SPLIT)


def test_reconcile_takes_one_stack_or_all(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["reconcile", "--stack", "prod", "--all"])
    assert "not allowed with argument" in capsys.readouterr().err
