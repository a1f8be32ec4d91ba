"""PrefillDecode: the InferencePool, endpoint picker and sidecar that sequence prefill then decode,
and the warnings for pairs that would silently serve decode-only or crash without NIXL."""

from __future__ import annotations

import pytest
import yaml

from modelplane.compose import Settings
from tests.compose.helpers import codes, compose, deployment, engine, find, member

KV = '--kv-transfer-config={"kv_connector":"NixlConnector","kv_role":"kv_both"}'


def pd(prefill_args: list[str] | None = None, decode_args: list[str] | None = None,
       image: str = "vllm/vllm-openai:v0.23.0", **kwargs: object) -> object:
    prefill = engine("prefill", member(args=prefill_args if prefill_args is not None else [KV], image=image), copies=2,
                     phase="Prefill")
    decode = engine("decode", member(args=decode_args if decode_args is not None else [KV, "--port=8200"], image=image),
                    phase="Decode")
    return compose(deployment("pair", prefill, decode, mode="PrefillDecode"), **kwargs)


def objects(rendered: object) -> list[dict]:
    return list(rendered.clusters["gpu-a"])  # type: ignore[attr-defined]


def pod(ms: list[dict], engine_name: str) -> dict:
    return find(ms, "Deployment", f"-{engine_name}")["spec"]["template"]


def test_a_pair_renders_pool_picker_and_route_instead_of_services() -> None:
    ms = objects(pd())
    assert sorted(m["kind"] for m in ms if m["metadata"]["name"].endswith("-epp")) == [
        "ConfigMap", "Deployment", "Role", "RoleBinding", "Service", "ServiceAccount"]
    assert [m["metadata"]["name"] for m in ms if m["kind"] == "Service"] == ["pair-gpu-a-0-epp"]
    assert find(ms, "HTTPRoute")["spec"]["rules"][0]["backendRefs"] == [
        {"group": "inference.networking.k8s.io", "kind": "InferencePool", "name": "pair-gpu-a-0", "weight": 1}]


def test_the_pool_selects_the_serving_pods_of_both_phases_on_the_prefill_port() -> None:
    ms = objects(pd())
    pool = find(ms, "InferencePool")["spec"]
    assert pool["targetPorts"] == [{"number": 8000}]
    assert pool["endpointPickerRef"] == {"name": "pair-gpu-a-0-epp", "port": {"number": 9002}, "failureMode": "FailClose"}
    for phase in ("prefill", "decode"):
        labels = pod(ms, phase)["metadata"]["labels"]
        assert pool["selector"]["matchLabels"].items() <= labels.items()
        assert labels["llm-d.ai/role"] == phase


def test_the_picker_has_a_prefill_and_a_decode_profile_filtering_by_role() -> None:
    config = yaml.safe_load(find(objects(pd()), "ConfigMap")["data"]["pd-config.yaml"])
    assert [p["name"] for p in config["schedulingProfiles"]] == ["prefill", "decode"]
    assert [p["plugins"][0]["pluginRef"] for p in config["schedulingProfiles"]] == ["prefill-filter", "decode-filter"]
    assert {"type": "pd-profile-handler", "parameters": {"threshold": 0}} in config["plugins"]


def test_only_the_decode_pods_carry_the_routing_sidecar_in_front_of_the_engine() -> None:
    ms = objects(pd())
    assert "initContainers" not in pod(ms, "prefill")["spec"]
    [sidecar] = pod(ms, "decode")["spec"]["initContainers"]
    assert sidecar["image"] == Settings().pd_sidecar_image
    assert sidecar["restartPolicy"] == "Always"
    assert sidecar["args"][:2] == ["--port=8000", "--vllm-port=8200"]


def test_both_engines_get_the_nixl_side_channel_env_and_keep_their_args() -> None:
    ms = objects(pd())
    for phase in ("prefill", "decode"):
        container = pod(ms, phase)["spec"]["containers"][0]
        assert [e["name"] for e in container["env"]] == ["VLLM_NIXL_SIDE_CHANNEL_HOST", "VLLM_NIXL_SIDE_CHANNEL_PORT"]
        assert KV in container["args"]


def test_images_come_from_settings() -> None:
    settings = Settings(endpoint_picker_image="picker:9", pd_sidecar_image="sidecar:9")
    ms = objects(pd(settings=settings))
    assert find(ms, "Deployment", "-epp")["spec"]["template"]["spec"]["containers"][0]["image"] == "picker:9"
    assert pod(ms, "decode")["spec"]["initContainers"][0]["image"] == "sidecar:9"


WARNINGS = [
    ("a pair with KV transfer, a current image and distinct ports warns of nothing", {}, []),
    ("a phase engine without KV-transfer flags would serve decode-only",
     {"prefill_args": []}, ["pd-no-kv-transfer"]),
    ("a vLLM tag older than the first with NIXL would crash", {"image": "vllm/vllm-openai:v0.8.5"},
     ["pd-no-nixl", "pd-no-nixl"]),
    ("a decode engine on the prefill port collides with the sidecar", {"decode_args": [KV]}, ["pd-port-conflict"]),
]


@pytest.mark.parametrize(("kwargs", "want"), [c[1:] for c in WARNINGS], ids=[c[0] for c in WARNINGS])
def test_warnings(kwargs: dict, want: list[str]) -> None:
    assert codes(pd(**kwargs)) == want
