"""Compose's warnings: `plan_warnings` with a placement is exactly `render(...).warnings`, and without
one (`validate`) it keeps those that do not depend on the placement, selectors no device satisfies
among them."""

from __future__ import annotations

from pathlib import Path

import pytest

from modelplane.api import load_sources
from modelplane.compose import plan_warnings, render
from modelplane.scheduling import place

EXAMPLES = Path(__file__).parent.parent.parent / "examples"
L4_SELECTOR = 'device.capacity["gpu.nvidia.com"].memory.compareTo(quantity("20Gi")) >= 0'


def sources(example: str, old: str = "", new: str = "") -> list[tuple[str, str]]:
    return [(str(path), path.read_text().replace(old, new) if old else path.read_text())
            for path in sorted((EXAMPLES / example).glob("*.yaml"))]


CASES = [
    ("a NIXL-less image in each engine of a prefill/decode pair",
     sources("prefill-decode", "vllm/vllm-openai:v0.23.0", "vllm/vllm-openai:v0.10.0"),
     ["pd-no-nixl", "secret-not-created"] * 2),
    ("the decode engine on the routing sidecar's port",
     sources("prefill-decode", "--port=8200", "--port=8000"),
     ["secret-not-created", "pd-port-conflict", "secret-not-created"]),
    ("a Secret the engines read only if it exists", sources("prefill-decode", "key: HF_TOKEN}", "key: HF_TOKEN, "
                                                            "optional: true}"), []),
    ("an attribute name with a typo",
     sources("qwen3-8b", L4_SELECTOR, 'device.attributes["gpu.nvidia.com"].archtecture == "Ada Lovelace"'),
     ["selector-matches-no-device"]),
    ("a quantity written as 40GB",
     sources("qwen3-8b", "20Gi", "40GB"), ["selector-matches-no-device"]),
    ("a comparison no published device passes",
     sources("qwen3-8b", "20Gi", "24Gi"), ["selector-matches-no-device"]),
    ("another driver's domain", sources("qwen3-8b", "gpu.nvidia.com\"].memory", "gpu.amd.com\"].memory"),
     ["selector-matches-no-device"]),
    ("a selector some device satisfies", sources("qwen3-8b"), []),
]


@pytest.mark.parametrize(("name", "docs", "codes"), CASES, ids=[c[0] for c in CASES])
def test_validate_and_plan_warn_as_render_does(name: str, docs: list[tuple[str, str]], codes: list[str]) -> None:
    manifests = load_sources(docs)
    placement = place(manifests.fleet, manifests.workloads)
    assert [w.code for w in plan_warnings(manifests)] == codes
    assert plan_warnings(manifests, placement) == render(manifests, placement).warnings
    assert [w.code for w in render(manifests, placement).warnings] == codes


def test_a_typo_names_the_closest_published_attribute() -> None:
    manifests = load_sources(sources("qwen3-8b", L4_SELECTOR, 'device.attributes["gpu.nvidia.com"].architecure == "x"'))
    (warning,) = plan_warnings(manifests)
    assert (warning.file.endswith("model.yaml"), warning.line) == (True, 20)
    assert warning.message.endswith("no device publishes the attribute gpu.nvidia.com/architecure "
                                    "(closest: 'architecture')")


def test_a_capacity_typo_is_called_a_capacity() -> None:
    manifests = load_sources(sources("qwen3-8b", L4_SELECTOR, L4_SELECTOR.replace(".memory.", ".memroy.")))
    (warning,) = plan_warnings(manifests)
    assert warning.message.endswith("no device publishes the capacity gpu.nvidia.com/memroy (closest: 'memory')")


def test_a_service_that_selects_no_replica_warns_only_with_a_placement() -> None:
    manifests = load_sources(sources("qwen-demo", "deployment: qwen-demo", "deployment: nope"))
    placement = place(manifests.fleet, manifests.workloads)
    assert [w.code for w in plan_warnings(manifests)] == ["plain-http-gateway"]
    assert [w.code for w in plan_warnings(manifests, placement)] == ["plain-http-gateway", "service-empty",
                                                                     "service-selects-nothing"]
    assert plan_warnings(manifests, placement) == render(manifests, placement).warnings


def test_a_secret_stack_config_holds_is_created_where_its_readers_run_and_not_warned_about() -> None:
    manifests = load_sources(sources("prefill-decode"))
    placement = place(manifests.fleet, manifests.workloads)
    configured = [("ml-team", "hf-token", "HF_TOKEN")]
    rendered = render(manifests, placement, secrets=configured)
    secrets = [(cluster, m["metadata"]["name"], m["stringData"]) for cluster, objects in rendered.clusters.items()
               for m in objects if m["kind"] == "Secret"]
    assert secrets == [("gke-us-east", "hf-token", {"HF_TOKEN": "modelplane-secret:ml-team/hf-token/HF_TOKEN"})]
    assert rendered.warnings == plan_warnings(manifests, placement, secrets=configured) == ()
    assert [w.message.split(", which")[0] for w in plan_warnings(manifests)] == [
        "reads Secret ml-team/hf-token key 'HF_TOKEN'"] * 2
