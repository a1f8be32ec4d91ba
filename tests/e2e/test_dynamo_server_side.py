"""`InferenceCluster.spec.stack: Dynamo` on a real kube-apiserver 1.34: what compose emits for a
Dynamo cluster is accepted with the published Grove and KAI CRDs installed (tests/data/crds, which
the suite's `fleet` fixture installs), and the generated InferenceCluster CRD refuses a change of
`stack`.

Acceptance: three example fleets (a Leader + Worker gang, prefill/decode Standalone members with
copies, a plain Standalone engine), each with every InferenceCluster switched to `stack: Dynamo`, are rendered by the CLI
(`modelplane plan --render`, as a user runs it); each cluster's objects and its serving stack's
plain objects (the KAI `Queue`, the ModelExpress CRDs) go through `kubectl apply --server-side
--dry-run=server`, then for real, and the stored Grove and KAI objects are read back: everything
we rendered is still there (the API server prunes fields its schema does not know without an error
when validation is not strict, so "accepted" alone would not prove the object survived intact).

Immutability: the transition rule on `spec.stack` is submitted through the generated CRD
(`modelplane crds`). The server defaults `stack` to Standard on create, and also on read of an
object stored before the field existed; so "once set" is always, and a first explicit
`stack: Dynamo` on such an object is refused too (docs/dynamo.md says so).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from modelplane.local.servers import Cluster, Fleet
from tests.e2e.conftest import ROOT, kubectl
from tests.e2e.test_server_side_validation import apply, delete, rendered_clusters, rendered_objects

MODELPLANE = str(ROOT / ".venv" / "bin" / "modelplane")
EXAMPLES = ("kimi-k2", "prefill-decode", "qwen3-8b")
GANGS = {"kimi-k2"}
"""The examples with a Leader + Worker engine (prefill-decode's copies are Standalone members)."""
GROVE_AND_KAI = {("grove.io/v1alpha1", "PodCliqueSet"), ("scheduling.run.ai/v2", "Queue")}
IMMUTABLE = "stack is immutable once set"


def on_dynamo(example: Path, target: Path) -> Path:
    """A copy of an example fleet whose every InferenceCluster has `stack: Dynamo`."""
    target.mkdir(parents=True)
    switched = 0
    for path in sorted(example.glob("*.yaml")):
        documents = [d for d in yaml.safe_load_all(path.read_text()) if d]
        for document in documents:
            if document.get("kind") == "InferenceCluster":
                document["spec"]["stack"] = "Dynamo"
                switched += 1
        (target / path.name).write_text(yaml.safe_dump_all(documents, sort_keys=False))
    assert switched, f"{example.name} has no InferenceCluster"
    return target


def contained(rendered: Any, stored: Any, where: str = "") -> list[str]:
    """Where `rendered` is not part of `stored` (maps by key, lists item by item, scalars equal)."""
    if isinstance(rendered, dict):
        if not isinstance(stored, dict):
            return [f"{where}: not an object on the server"]
        return [m for key, value in rendered.items()
                for m in (contained(value, stored[key], f"{where}.{key}") if key in stored else [f"{where}.{key}: dropped"])]
    if isinstance(rendered, list):
        if not isinstance(stored, list) or len(stored) != len(rendered):
            return [f"{where}: list changed on the server"]
        return [m for i, (r, s) in enumerate(zip(rendered, stored, strict=True)) for m in contained(r, s, f"{where}[{i}]")]
    return [] if rendered == stored else [f"{where}: {rendered!r} stored as {stored!r}"]


def stored(tools: Path, cluster: Cluster, obj: dict[str, Any]) -> dict[str, Any]:
    namespace = ["-n", obj["metadata"]["namespace"]] if obj["metadata"].get("namespace") else []
    group = obj["apiVersion"].split("/")[0] if "/" in obj["apiVersion"] else ""
    resource = f"{obj['kind'].lower()}.{group}" if group else obj["kind"].lower()
    return json.loads(kubectl(tools, cluster, "get", resource, obj["metadata"]["name"], *namespace, "-o",
                              "json").stdout)


@pytest.mark.parametrize("example", EXAMPLES)
def test_every_object_of_a_dynamo_fleet_is_accepted_and_stored_intact(example: str, fleet: Fleet, tools: Path,
                                                                      tmp_path: Path) -> None:
    manifests = on_dynamo(ROOT / "examples" / example, tmp_path / "manifests")
    out = tmp_path / "rendered"
    done = subprocess.run([MODELPLANE, "plan", str(manifests), "--render", str(out)], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    servers = list(fleet.clusters.values())
    kinds: set[tuple[str, str]] = set()
    pods = []
    for index, name in enumerate(rendered_clusters(out)):
        server, objects = servers[index % len(servers)], rendered_objects(out, name)
        namespaces = [o for o in objects if o["kind"] == "Namespace"]
        rest = [o for o in objects if o["kind"] != "Namespace"]
        apply(tools, server, namespaces)
        apply(tools, server, rest, "--dry-run=server")
        apply(tools, server, rest)
        try:
            for obj in rest:
                kinds.add((obj["apiVersion"], obj["kind"]))
                if (obj["apiVersion"], obj["kind"]) in GROVE_AND_KAI:
                    back = stored(tools, server, obj)
                    assert contained(obj["spec"], back["spec"], "spec") == [], (obj["kind"], obj["metadata"]["name"])
                if obj["kind"] == "PodCliqueSet":
                    pods += [c["spec"]["podSpec"] for c in obj["spec"]["template"]["cliques"]]
                if obj["kind"] == "Deployment" and "modelplane.ai/engine" in obj["spec"]["template"]["metadata"]["labels"]:
                    pods.append(obj["spec"]["template"]["spec"])
        finally:
            delete(tools, server, rest)
            delete(tools, server, namespaces)
    assert ("scheduling.run.ai/v2", "Queue") in kinds, "the serving stack's KAI queue is part of what is checked"
    assert ("leaderworkerset.x-k8s.io/v1", "LeaderWorkerSet") not in kinds
    assert (("grove.io/v1alpha1", "PodCliqueSet") in kinds) is (example in GANGS), "gangs, and only gangs, are Grove's"
    assert pods and all(p.get("schedulerName") == "kai-scheduler" for p in pods), "every engine pod is KAI's"


def cluster_object(name: str, stack: str | None) -> dict[str, Any]:
    """The first InferenceCluster of examples/qwen3-8b, renamed, with `stack` set or left out."""
    documents = yaml.safe_load_all((ROOT / "examples" / "qwen3-8b" / "fleet.yaml").read_text())
    obj = next(d for d in documents if d and d["kind"] == "InferenceCluster")
    obj["metadata"] = {"name": name}
    obj["spec"].pop("stack", None)
    if stack is not None:
        obj["spec"]["stack"] = stack
    return obj


def without_stack(crds: str) -> str:
    """The generated CRDs as a release before `stack` existed would have served them (no field, no rule)."""
    documents = list(yaml.safe_load_all(crds))
    for crd in documents:
        if crd["spec"]["names"]["kind"] == "InferenceCluster":
            for version in crd["spec"]["versions"]:
                spec = version["schema"]["openAPIV3Schema"]["properties"]["spec"]
                del spec["properties"]["stack"]
                spec["x-kubernetes-validations"] = [r for r in spec["x-kubernetes-validations"] if ".stack" != r.get(
                    "fieldPath")]
    return yaml.safe_dump_all(documents)


def test_stack_is_defaulted_and_a_change_is_refused_by_the_api_server(fleet: Fleet, tools: Path) -> None:
    east = fleet.clusters["east"]

    def run(*args: str, stdin: str | None = None, check: bool = True) -> subprocess.CompletedProcess[str]:
        return kubectl(tools, east, *args, stdin=stdin, check=check)

    def patch(name: str, stack: str) -> subprocess.CompletedProcess[str]:
        return run("patch", "inferencecluster", name, "--type=merge", "-p", json.dumps({"spec": {"stack": stack}}),
                   check=False)

    def stack_of(name: str) -> str:
        return json.loads(run("get", "inferencecluster", name, "-o", "json").stdout)["spec"]["stack"]

    crds = subprocess.run([MODELPLANE, "crds"], capture_output=True, text=True, timeout=120, check=True).stdout
    # An object stored by a release that had no `stack`, then the CRD of this release.
    run("apply", "--server-side", "-f", "-", stdin=without_stack(crds))
    run("wait", "--for=condition=Established", "crd/inferenceclusters.modelplane.ai", "--timeout=60s")
    run("create", "-f", "-", stdin=yaml.safe_dump(cluster_object("older", None)))
    run("apply", "--server-side", "--force-conflicts", "-f", "-", stdin=crds)
    run("wait", "--for=condition=Established", "crd/inferenceclusters.modelplane.ai", "--timeout=60s")
    for name, stack in (("plain", None), ("standard", "Standard"), ("dynamo", "Dynamo")):
        run("create", "-f", "-", stdin=yaml.safe_dump(cluster_object(name, stack)))

    assert {name: stack_of(name) for name in ("older", "plain", "standard", "dynamo")} == {
        "older": "Standard", "plain": "Standard", "standard": "Standard", "dynamo": "Dynamo"}
    for name, other in (("plain", "Dynamo"), ("standard", "Dynamo"), ("dynamo", "Standard"), ("older", "Dynamo")):
        refused = patch(name, other)
        assert refused.returncode != 0 and IMMUTABLE in refused.stderr, (name, refused.stderr)
        assert "spec.stack" in refused.stderr, refused.stderr
    assert patch("dynamo", "Dynamo").returncode == 0, "the same value is no change"
    relabelled = run("label", "inferencecluster", "dynamo", "team=serving")
    assert relabelled.returncode == 0 and stack_of("dynamo") == "Dynamo", "other edits are not affected"
    run("delete", "inferencecluster", "older", "plain", "standard", "dynamo")
