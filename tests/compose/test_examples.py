"""Every example set, rendered: valid against Kubernetes 1.34 and the CRD schemas, well named, stable.

Stability is checked the way a reviewer would meet it: the YAML files of two runs are
byte-identical, and so are those of a run whose inputs arrive in another order (files, documents
within files, placement replicas, engines within a replica).
"""

from __future__ import annotations

import random
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from modelplane.api import load, load_sources
from modelplane.api.loader import read_sources
from modelplane.compose import Rendered, render
from modelplane.scheduling import Placement, place
from tests.compose.schemas import problems

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted(path.parent.name for path in (ROOT / "examples").glob("*/fleet.yaml"))
"""Every manifest set under examples/ (each has a fleet.yaml; the staged getting-started tour is rendered and
validated stage by stage in tests/test_getting_started.py; other directories are not manifest sets)."""
DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")


def rendered_example(example: str) -> Rendered:
    manifests = load([ROOT / "examples" / example])
    return render(manifests, place(manifests.fleet, manifests.workloads))


def all_manifests(rendered: Rendered) -> list[dict]:
    addon_objects = [obj for addons in rendered.addons.values() for addon in addons for obj in addon.objects]
    return [*(m for ms in rendered.clusters.values() for m in ms), *rendered.gateway, *addon_objects]


@pytest.fixture(scope="module", params=EXAMPLES)
def example(request: pytest.FixtureRequest) -> tuple[str, Rendered]:
    return request.param, rendered_example(request.param)


def test_every_rendered_manifest_validates_against_kubernetes_and_crd_schemas(example: tuple[str, Rendered]) -> None:
    _, rendered = example
    failures = {f"{m['kind']}/{m['metadata']['name']}": found for m in all_manifests(rendered) if (found := problems(m))}
    assert failures == {}


def test_every_name_is_a_dns_label_of_at_most_63_characters(example: tuple[str, Rendered]) -> None:
    _, rendered = example
    bad = [m["metadata"]["name"] for m in all_manifests(rendered)
           if len(m["metadata"]["name"]) > 63 or not DNS_LABEL.match(m["metadata"]["name"])]
    assert bad == []


def test_each_object_has_a_unique_identity_on_its_cluster(example: tuple[str, Rendered]) -> None:
    name, rendered = example
    manifests = load([ROOT / "examples" / name])
    per_cluster = {cluster: list(ms) for cluster, ms in rendered.clusters.items()}
    if manifests.fleet.gateway:
        per_cluster[manifests.fleet.gateway.spec.cluster] += rendered.gateway
    for cluster, ms in per_cluster.items():
        keys = [(m["apiVersion"], m["kind"], m["metadata"].get("namespace", ""), m["metadata"]["name"]) for m in ms]
        assert len(keys) == len(set(keys)), cluster


def test_every_replica_object_carries_the_modelplane_labels(example: tuple[str, Rendered]) -> None:
    _, rendered = example
    for ms in rendered.clusters.values():
        for m in ms:
            labels = m["metadata"].get("labels", {})
            assert labels.get("app.kubernetes.io/managed-by") == "modelplane", m["metadata"]["name"]
            if "modelplane.ai/service" in labels:  # a ModelService's route on this cluster
                assert m["kind"] == "HTTPRoute" and "modelplane.ai/cluster" in labels, m["metadata"]["name"]
            elif m["kind"] in ("Deployment", "LeaderWorkerSet", "ResourceClaimTemplate", "HTTPRoute", "InferencePool"):
                assert {"modelplane.ai/deployment", "modelplane.ai/cluster", "modelplane.ai/replica-index"} <= set(labels)


def test_every_example_renders_without_warnings_but_the_token_stack_config_must_create(
        example: tuple[str, Rendered]) -> None:
    """The prefill/decode pair reads Secret hf-token, which only stack config creates (its README says so);
    an example whose gateway asks for plain HTTP is warned about it; multi-cloud shows the secured gateway."""
    name, rendered = example
    want = ["secret-not-created"] * 2 if name == "prefill-decode" else []
    want += ["plain-http-gateway"] if name in ("local", "qwen-demo") else []
    assert [problem.code for problem in rendered.warnings] == want


def test_the_multi_cloud_provider_gets_the_openai_paths_at_its_root() -> None:
    """`/ml-team/qwen3/v1/chat/completions` reaches the provider as `/v1/chat/completions`."""
    rendered = rendered_example("multi-cloud")
    [rule] = next(m for m in rendered.gateway if m["kind"] == "HTTPRoute" and m["metadata"]["name"] == "qwen3")["spec"]["rules"]
    assert rule["filters"] == [{"type": "URLRewrite", "urlRewrite": {
        "path": {"type": "ReplacePrefixMatch", "replacePrefixMatch": "/"}}}]
    assert {ref["name"]: ref["filters"] for ref in rule["backendRefs"]}["external-qwen3-8b-hosted"] == [
        {"type": "URLRewrite", "urlRewrite": {"hostname": "api.inference-provider.example.com"}}]


@pytest.mark.parametrize("example", ["prefill-decode", "multi-cloud"])
def test_the_decode_engine_serves_beside_the_routing_sidecar(example: str) -> None:
    decode = next(m for ms in rendered_example(example).clusters.values() for m in ms
                  if m["kind"] == "Deployment" and m["metadata"]["name"].endswith("-decode"))["spec"]["template"]["spec"]
    assert "--port=8200" in decode["containers"][0]["args"]
    assert decode["initContainers"][0]["args"][:2] == ["--port=8000", "--vllm-port=8200"]


def test_two_runs_give_byte_identical_files() -> None:
    assert rendered_example("multi-cloud").files() == rendered_example("multi-cloud").files()


def test_shuffled_inputs_give_byte_identical_files() -> None:
    sources, _ = read_sources([ROOT / "examples" / "multi-cloud"])
    manifests = load_sources(sources)
    placement = place(manifests.fleet, manifests.workloads)
    want = render(manifests, placement).files()

    shuffler = random.Random(7)
    shuffled_sources = []
    for file, text in sources:
        documents = text.split("\n---\n")
        shuffler.shuffle(documents)
        shuffled_sources.append((file, "\n---\n".join(documents)))
    shuffler.shuffle(shuffled_sources)
    replicas = [replica.model_dump(mode="json", by_alias=True) for replica in placement.replicas]
    for replica in replicas:
        replica["engines"] = dict(reversed(list(replica["engines"].items())))
    shuffler.shuffle(replicas)
    reordered = Placement.from_json({**placement.to_json(), "replicas": replicas})
    assert render(load_sources(shuffled_sources), reordered).files() == want


def test_files_lay_out_one_object_per_file_plus_stack_and_endpoints() -> None:
    files = rendered_example("qwen-demo").files()
    assert "starter/ml-team/deployment-qwen-demo-starter-0-qwen.yaml" in files
    assert "starter/_cluster/namespace-ml-team.yaml" in files
    assert "_inventory/stacks/starter.yaml" in files
    assert "_gateway/ml-team/httproute-qwen.yaml" in files
    assert "_inventory/endpoints.yaml" in files
    assert list(files) == sorted(files)
    deployment = yaml.safe_load(files["starter/ml-team/deployment-qwen-demo-starter-0-qwen.yaml"])
    assert deployment["kind"] == "Deployment"


def test_rendering_imports_no_pulumi() -> None:
    code = ("import sys; from modelplane.api import load; from modelplane.scheduling import place; "
            "from modelplane.compose import render; m = load(['examples/multi-cloud']); "
            "render(m, place(m.fleet, m.workloads)).files(); "
            "assert 'pulumi' not in sys.modules, sorted(n for n in sys.modules if 'pulumi' in n)")
    subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True)


def test_the_strict_crd_check_rejects_an_unknown_field() -> None:
    route = next(m for m in rendered_example("qwen-demo").gateway if m["kind"] == "HTTPRoute")
    broken = {**route, "spec": {**route["spec"], "rules": [{**route["spec"]["rules"][0], "retries": 3}]}}
    assert problems(route) == []
    assert problems(broken) != []


def test_each_file_reads_back_as_exactly_the_rendered_manifest() -> None:
    rendered = rendered_example("multi-cloud")
    files = rendered.files()
    for cluster, manifests in rendered.clusters.items():
        for manifest in manifests:
            path = f"{cluster}/{manifest['metadata'].get('namespace', '_cluster')}/{manifest['kind'].lower()}-" \
                   f"{manifest['metadata']['name']}.yaml"
            if manifest["kind"] != "Secret":
                assert yaml.safe_load(files[path]) == manifest
    assert list(yaml.safe_load_all(files["_inventory/endpoints.yaml"])) == list(rendered.endpoints)


def test_every_file_outside_the_inventory_is_one_applyable_kubernetes_object() -> None:
    files = rendered_example("multi-cloud").files()
    objects = {path: list(yaml.safe_load_all(text)) for path, text in files.items() if not path.startswith("_inventory/")}
    assert {path: [set(obj) >= {"apiVersion", "kind", "metadata"} for obj in docs]
            for path, docs in objects.items()} == {path: [True] for path in objects}


def test_a_secret_pulumi_fills_in_is_written_without_its_placeholder_and_names_its_config_key() -> None:
    text = rendered_example("multi-cloud").files()["onprem-us-east/ml-team/secret-hf-token.yaml"]
    assert "modelplane-secret:" not in text
    assert text.startswith("# HF_TOKEN: filled in by `pulumi up` from stack config "
                           "modelplane:secrets.ml-team.hf-token.HF_TOKEN;")
    assert "stringData" not in yaml.safe_load(text)
