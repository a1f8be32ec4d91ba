"""ModelCache: where it is staged, what stages it, how engines mount it, and the `--model` rule."""

from __future__ import annotations

from typing import Any

import pytest

from modelplane.api import Fleet, InferenceCluster, load_sources
from modelplane.compose import Settings, secret_placeholder
from tests.builders import API, pool
from tests.compose.helpers import FLEET, H100, codes, compose, deployment, engine, find, member, model_cache


def engine_containers(rendered: Any) -> list[dict]:
    containers = []
    for ms in rendered.clusters.values():
        for m in ms:
            if m["kind"] == "Deployment" and m["metadata"]["labels"].get("modelplane.ai/deployment"):
                containers += m["spec"]["template"]["spec"]["containers"]
            if m["kind"] == "LeaderWorkerSet":
                lwt = m["spec"]["leaderWorkerTemplate"]
                containers += lwt["leaderTemplate"]["spec"]["containers"] + lwt["workerTemplate"]["spec"]["containers"]
    return containers


MODEL_ARG_CASES = [
    ("no command and no --model: --model=/mnt/models is added after the user's args",
     {"args": ["--served-model-name=x"]}, ["--served-model-name=x", "--model=/mnt/models"]),
    ("the user's own --model=... is kept and nothing is added", {"args": ["--model=org/m"]}, ["--model=org/m"]),
    ("the user's own --model as two words is kept", {"args": ["--model", "org/m"]}, ["--model", "org/m"]),
    ("a container with a command gets no --model", {"command": ["/bin/sh", "-c", "exec vllm serve /mnt/models"]}, None),
]


@pytest.mark.parametrize(("fields", "want"), [c[1:] for c in MODEL_ARG_CASES], ids=[c[0] for c in MODEL_ARG_CASES])
def test_model_arg(fields: dict, want: list[str] | None) -> None:
    rendered = compose(deployment("m", engine("e", member(**fields)), cache="weights"), caches=(model_cache("weights"),))
    assert engine_containers(rendered)[0].get("args") == want


def test_every_engine_container_of_a_referencing_deployment_mounts_the_cache_read_only() -> None:
    gang = engine("big", member("Leader", command=["run"]), member("Worker", nodes=1, command=["run"]))
    rendered = compose(deployment("m", gang, cache="weights"), caches=(model_cache("weights"),))
    lws = find([m for ms in rendered.clusters.values() for m in ms], "LeaderWorkerSet")
    for template in (lws["spec"]["leaderWorkerTemplate"]["leaderTemplate"], lws["spec"]["leaderWorkerTemplate"]["workerTemplate"]):
        assert {"name": "model-cache", "persistentVolumeClaim": {"claimName": "weights-cache", "readOnly": True}} \
            in template["spec"]["volumes"]
        assert {"name": "model-cache", "mountPath": "/mnt/models", "readOnly": True} \
            in template["spec"]["containers"][0]["volumeMounts"]


def test_a_deployment_without_a_cache_mounts_none() -> None:
    rendered = compose(deployment("m"), caches=(model_cache("weights"),))
    assert all(mount["name"] != "model-cache" for c in engine_containers(rendered) for mount in c["volumeMounts"])


STAGING_CASES = [
    ("a cache's clusterSelector picks its clusters", {"zone": "b"}, None, ["gpu-b"]),
    ("without a selector, a cache goes where its deployments may run", None, {"zone": "a"}, ["gpu-a"]),
    ("without either selector, a cache goes to every cluster", None, None, ["gpu-a", "gpu-b"]),
]


@pytest.mark.parametrize(("cache_selector", "deployment_selector", "want"), [c[1:] for c in STAGING_CASES],
                         ids=[c[0] for c in STAGING_CASES])
def test_staged_clusters(cache_selector: dict | None, deployment_selector: dict | None, want: list[str]) -> None:
    rendered = compose(deployment("m", cache="weights", selector=deployment_selector),
                       caches=(model_cache("weights", selector=cache_selector),))
    staged = [c for c, ms in rendered.clusters.items() if any(m["kind"] == "PersistentVolumeClaim" for m in ms)]
    assert staged == want


def test_caches_whose_deployments_repeat_selectors_are_each_staged_where_their_own_deployments_run() -> None:
    rendered = compose(deployment("m1", cache="both", selector={"zone": "a"}),
                       deployment("m2", cache="both", selector={"zone": "b"}),
                       deployment("m3", cache="one", selector={"zone": "a"}),
                       deployment("m4", cache="one", selector={"zone": "a"}),
                       caches=(model_cache("both"), model_cache("one")))
    staged = {c: sorted(m["metadata"]["name"] for m in ms if m["kind"] == "PersistentVolumeClaim")
              for c, ms in rendered.clusters.items()}
    assert staged == {"gpu-a": ["both-cache", "one-cache"], "gpu-b": ["both-cache"]}


def test_a_staged_cache_is_a_rwx_pvc_a_download_job_and_the_token_secret() -> None:
    rendered = compose(deployment("m", cache="weights"), caches=(model_cache("weights"),))
    ms = rendered.clusters["gpu-a"]
    pvc = find(ms, "PersistentVolumeClaim")
    assert pvc["spec"]["accessModes"] == ["ReadWriteMany"]
    assert pvc["spec"]["resources"] == {"requests": {"storage": "100Gi"}}
    assert "storageClassName" not in pvc["spec"]  # an Existing cluster that names no class: its default
    secret = find(ms, "Secret")
    assert secret["metadata"]["name"] == "hf-token"
    assert secret["stringData"] == {"HF_TOKEN": secret_placeholder("ml", "hf-token", "HF_TOKEN")}
    job = find(ms, "Job", "weights-download")["spec"]["template"]["spec"]
    container = job["containers"][0]
    assert container["image"] == Settings().downloader_image
    assert "HF_TOKEN" not in {var["name"] for var in container["env"]}, "the token is a file, not in the environment"
    assert {"name": "HF_TOKEN_PATH", "value": "/var/run/secrets/huggingface/HF_TOKEN"} in container["env"]
    assert {"name": "hf-token", "mountPath": "/var/run/secrets/huggingface", "readOnly": True} in container["volumeMounts"]
    assert {"name": "hf-token", "secret": {"secretName": "hf-token", "defaultMode": 0o400,
                                           "items": [{"key": "HF_TOKEN", "path": "HF_TOKEN"}]}} in job["volumes"]
    assert job["automountServiceAccountToken"] is False
    assert container["securityContext"] == {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]},
                                            "seccompProfile": {"type": "RuntimeDefault"}}
    assert {"name": "REPO", "value": "org/model"} in container["env"]
    assert {"name": "REVISION", "value": "v1"} in container["env"]
    script = container["command"][2]
    assert script.index("/mnt/models/.modelplane-complete") < script.index("hf download")  # the marker skips a done job
    assert script.rstrip().endswith("> /mnt/models/.modelplane-complete")  # and is written last
    assert job["volumes"][0] == {"name": "model-cache", "persistentVolumeClaim": {"claimName": "weights-cache"}}


def test_a_public_cache_delivers_no_secret() -> None:
    rendered = compose(deployment("m", cache="weights"), caches=(model_cache("weights", secret=False),))
    assert not [m for m in rendered.clusters["gpu-a"] if m["kind"] == "Secret"]


def test_a_cluster_without_a_rwx_storage_class_is_warned_about() -> None:
    rendered = compose(deployment("m", cache="weights"), caches=(model_cache("weights"),))
    assert codes(rendered) == ["cache-default-storage-class", "cache-default-storage-class"]


def test_storage_class_per_cluster_source_is_the_configured_rwx_class() -> None:
    eks = InferenceCluster.model_validate({
        "apiVersion": API, "kind": "InferenceCluster", "metadata": {"name": "eks"},
        "spec": {"cluster": {"source": "EKS", "eks": {"region": "us-west-2"}}, "nodePools": [pool("h100", "h100", nodes=8)]}})
    rendered = compose(deployment("m", cache="weights"), caches=(model_cache("weights"),),
                       fleet=Fleet(clusters=(eks,), classes=(H100,)), settings=Settings(eks_rwx_storage_class="efs-rwx"))
    assert find(rendered.clusters["eks"], "PersistentVolumeClaim")["spec"]["storageClassName"] == "efs-rwx"


def test_replicas_land_only_where_their_cache_is_staged() -> None:
    rendered = compose(deployment("m", cache="weights", replicas=2), caches=(model_cache("weights", selector={"zone": "a"}),))
    assert [m["metadata"]["name"] for m in rendered.endpoints] == ["m-gpu-a-0", "m-gpu-a-1"]


def test_a_gang_without_a_cache_is_warned_about_when_loading() -> None:
    text = """
apiVersion: modelplane.ai/v1alpha1
kind: ModelDeployment
metadata: {name: m, namespace: ml}
spec:
  engines:
  - name: big
    members:
    - role: Leader
      nodeSelector: {devices: [{name: gpu, selectors: [{cel: 'device.driver == "gpu.nvidia.com"'}]}]}
      template: {spec: {containers: [{name: engine, image: vllm}]}}
    - role: Worker
      worker: {nodes: 1}
      template: {spec: {containers: [{name: engine, image: vllm}]}}
"""
    assert [p.code for p in load_sources([("m.yaml", text)]).warnings] == ["gang-without-cache"]


def test_the_fleet_has_no_cache_objects_for_a_cache_nobody_references() -> None:
    rendered = compose(caches=(model_cache("weights"),), fleet=FLEET)
    assert all(m["kind"] != "Job" for ms in rendered.clusters.values() for m in ms)
