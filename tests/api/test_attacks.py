"""A corpus of hostile and careless inputs (issue 23), each refused at validation with a problem
that names the file, the object and the field.

Each case is a GOOD manifest edited one way; the expected fragment is the field path and the start
of the message, written by hand from the rule the case breaks.
"""

from __future__ import annotations

import pytest

from modelplane.api import ManifestErrors, load_sources

GOOD = """\
apiVersion: modelplane.ai/v1alpha1
kind: ModelDeployment
metadata:
  name: m
  namespace: attacker
spec:
  replicas: 1
  engines:
  - name: e
    members:
    - nodeSelector:
        devices:
        - name: gpu
          selectors:
          - cel: device.driver == "gpu.nvidia.com"
      template:
        metadata:
          annotations: {note: x}
        spec:
          containers:
          - name: engine
            image: vllm
            args: ["--a=1"]
            env: [{name: A, value: b}]
"""


def errors(text: str) -> list[str]:
    with pytest.raises(ManifestErrors) as raised:
        load_sources([("m.yaml", text)])
    return [str(problem) for problem in raised.value.errors]


def edited(old: str, new: str) -> str:
    assert old in GOOD
    return GOOD.replace(old, new)


def test_the_good_manifest_loads() -> None:
    assert len(load_sources([("m.yaml", GOOD)]).workloads.deployments) == 1


SECRET = "modelplane-secret:team-a/hf-token/HF_TOKEN"


@pytest.mark.parametrize(("old", "new", "expected"), [
    ('args: ["--a=1"]', f'args: ["--token={SECRET}"]', "spec.engines[0].members[0].template.spec.containers[0].args[0]"),
    ("value: b}", f"value: '{SECRET}'}}", "spec.engines[0].members[0].template.spec.containers[0].env[0].value"),
    ("note: x", f"note: '{SECRET}'", "spec.engines[0].members[0].template.metadata.annotations.note"),
    ("note: x", f"'{SECRET}': x", f"spec.engines[0].members[0].template.metadata.annotations.{SECRET}"),
    ("note: x", "note: MODELPLANE-SECRET:a/b/c", "spec.engines[0].members[0].template.metadata.annotations.note"),
    ("image: vllm", "image: gke-us.gateway-address.modelplane.invalid/vllm",
     "spec.engines[0].members[0].template.spec.containers[0].image"),
])
def test_the_placeholders_modelplane_fills_in_are_refused_in_user_text(old: str, new: str, expected: str) -> None:
    found = [line for line in errors(edited(old, new)) if "Modelplane reserves" in line]
    assert len(found) == 1 and found[0].startswith("m.yaml:")
    assert f"ModelDeployment attacker/m: {expected}: holds " in found[0]


def test_the_control_namespace_holds_no_workload() -> None:
    found = errors(edited("namespace: attacker", "namespace: modelplane-system"))
    assert found == ["m.yaml:5: ModelDeployment modelplane-system/m: metadata.namespace: namespace modelplane-system "
                     "is the control plane's (it holds the fleet's credentials); put the object in your team's "
                     "namespace"]


def test_a_dangling_symlink_in_a_manifests_folder_is_an_error(tmp_path) -> None:
    from modelplane.api import load
    (tmp_path / "good.yaml").write_text(GOOD)
    (tmp_path / "gone.yaml").symlink_to(tmp_path / "deleted.yaml")
    with pytest.raises(ManifestErrors) as raised:
        load([tmp_path])
    assert [str(p) for p in raised.value.errors] == [
        f"{tmp_path / 'gone.yaml'}: cannot be read: No such file or directory (a symlink to a missing file)"]
    with pytest.raises(ManifestErrors, match="no such file or directory \\(a symlink to a missing file\\)"):
        load([tmp_path / "gone.yaml"])


def test_a_fifo_named_yaml_is_refused_without_blocking(tmp_path) -> None:
    import os

    from modelplane.api import load
    os.mkfifo(tmp_path / "pipe.yaml")
    with pytest.raises(ManifestErrors, match="pipe.yaml: is not a regular file"):
        load([tmp_path])
    with pytest.raises(ManifestErrors, match="pipe.yaml: is not a regular file"):
        load([tmp_path / "pipe.yaml"])


def test_terminal_escapes_in_a_manifest_are_shown_escaped(tmp_path, capsys) -> None:
    from modelplane.cli import main
    hostile = tmp_path / "m\x1b[2J.yaml"
    hostile.write_text(edited("name: m", 'name: "m\\e[31m\\u202e"'))
    assert main(["validate", str(hostile)]) == 1
    err = capsys.readouterr().err
    assert "\x1b" not in err and "\u202e" not in err
    assert "m\\x1b[2J.yaml:4: ModelDeployment attacker/m\\x1b[31m\\u202e: metadata.name: " in err


@pytest.mark.parametrize(("old", "new", "expected"), [
    ("note: x", "note: " + "x" * (256 * 1024), "spec.engines[0].members[0].template.metadata.annotations: "
     "annotations total 262,148 bytes; Kubernetes accepts at most 262,144"),
    ("image: vllm", 'image: "vllm\\0"', "spec.engines[0].members[0].template.spec.containers[0].image: "
     "'vllm\\x00' is not an image reference"),
    ("image: vllm", 'image: "vllm:latest --privileged"', "containers[0].image: 'vllm:latest --privileged' "
     "is not an image reference"),
    ("args: [\"--a=1\"]", "args: [\"" + "a" * 1_600_000 + "\"]", "ModelDeployment attacker/m: is 1,600,"),
])
def test_kubernetes_limits_and_image_references(old: str, new: str, expected: str) -> None:
    assert any(expected in line for line in errors(edited(old, new))), errors(edited(old, new))


@pytest.mark.parametrize("annotation", [
    "container.apparmor.security.beta.kubernetes.io/engine: unconfined",
    "container.apparmor.security.beta.kubernetes.io/engine: localhost/permissive",
    "seccomp.security.alpha.kubernetes.io/pod: unconfined",
    "container.seccomp.security.alpha.kubernetes.io/engine: Unconfined",
])
def test_annotations_that_weaken_confinement_are_refused(annotation: str) -> None:
    found = errors(edited("note: x", annotation))
    assert len(found) == 1 and "spec.engines[0].members[0].template.metadata.annotations: annotation " in found[0]
    assert "would weaken the pod's AppArmor/seccomp confinement" in found[0]


def test_the_runtime_default_profile_may_be_named() -> None:
    text = edited("note: x", "container.apparmor.security.beta.kubernetes.io/engine: runtime/default")
    assert load_sources([("m.yaml", text)]).workloads.deployments


FLEET = """\
apiVersion: modelplane.ai/v1alpha1
kind: InferenceCluster
metadata: {name: c}
spec:
  gateway: {auth: {apiKeysSecret: inference-api-keys}}
  cluster: {source: Existing, existing: {kubeconfig: cKubeconfig}}
  nodePools:
  - {name: p, className: k, nodeCount: 1}
---
apiVersion: modelplane.ai/v1alpha1
kind: InferenceClass
metadata: {name: k}
spec:
  devices:
  - name: gpu
    driver: gpu.nvidia.com
    deviceClassName: gpu.nvidia.com
"""


def deployment(name: str, engine: str) -> str:
    return GOOD.replace("name: m\n", f"name: {name}\n").replace("- name: e\n", f"- name: {engine}\n")


def test_deployments_whose_names_join_to_one_rendered_name_are_refused_naming_both() -> None:
    with pytest.raises(ManifestErrors) as raised:
        load_sources([("fleet.yaml", FLEET), ("a.yaml", deployment("a", "b-c-0-d")),
                      ("b.yaml", deployment("a-c-0-b", "d"))])
    assert [str(p) for p in raised.value.errors] == [
        "a.yaml:4: ModelDeployment attacker/a: metadata.name: renders an object named 'a-c-0-b-c-0-d', as "
        "ModelDeployment attacker/a-c-0-b does (b.yaml:1): their names and engine names join to the same string; "
        "rename one of them"]


def test_names_that_only_share_a_prefix_load() -> None:
    assert len(load_sources([("fleet.yaml", FLEET), ("a.yaml", deployment("a", "e")),
                             ("b.yaml", deployment("a-c", "e"))]).workloads.deployments) == 2


def test_a_prefill_decode_engine_named_like_the_endpoint_picker_is_refused() -> None:
    text = (GOOD.replace("spec:\n  replicas: 1\n", "spec:\n  replicas: 1\n  serving: {mode: PrefillDecode}\n")
            .replace("  - name: e\n", "  - name: epp\n    phase: Prefill\n"))
    decode = text[text.index("  - name: epp"):].replace("name: epp\n    phase: Prefill", "name: d\n    phase: Decode")
    with pytest.raises(ManifestErrors) as raised:
        load_sources([("fleet.yaml", FLEET), ("m.yaml", text + decode)])
    assert any("spec.engines[0].name: engine name 'epp' is the name of the replica's endpoint picker" in str(p)
               for p in raised.value.errors), [str(p) for p in raised.value.errors]


def test_two_caches_reading_one_secret_by_different_keys_are_refused() -> None:
    cache = """\
apiVersion: modelplane.ai/v1alpha1
kind: ModelCache
metadata: {name: NAME, namespace: ml}
spec:
  huggingFace: {repo: org/model, sizeGiB: 10, authSecret: {name: hf-token, key: KEY}}
"""
    with pytest.raises(ManifestErrors) as raised:
        load_sources([("c1.yaml", cache.replace("NAME", "one").replace("KEY", "A")),
                      ("c2.yaml", cache.replace("NAME", "two").replace("KEY", "B"))])
    assert [str(p) for p in raised.value.errors] == [
        "c2.yaml:5: ModelCache ml/two: spec.huggingFace.authSecret.key: ModelCache ml/one (c1.yaml:1) names Secret "
        "'hf-token' with key 'A'; Modelplane creates that Secret once per namespace and cluster, so both caches must "
        "read the same key (or name different Secrets)"]
