"""Benchmark: the real Pulumi engine at fleet scale, one stack against the split layout (issue 28).

Runs the project's e2e toolset (Pulumi CLI, language host, kubernetes provider, kube-apiserver, etcd;
built by e2e/build-tools.sh, so it runs only where that toolset is built, never in `make test`)
against --clusters loopback API servers (Existing clusters, one kube-apiserver each: they cannot share
one) with `servingStack: false` and `skipAwait: true`, the stand-in Gateway controller of the e2e
suite writing the Gateways' addresses. The fleet: one 8-GPU InferenceClass, clusters of 2,000 such
nodes, and --replicas single-replica Standalone ModelDeployments, each pinned to one cluster by a
clusterSelector (round robin), plus one ModelService; each size gets its own namespace, a fresh
stack and fresh servers (every stack creates the same cluster-scoped objects). Per size it prints the wall time of:

  one stack (`--layout single`):
    preview (new) | up (create) | preview, nothing changed | up --refresh, nothing changed |
    scale one deployment (up) | state (bytes of `stack export`) | resources
  split layout (`--layout split`): the fleet stack's up, then every workload stack's up, --parallel
    at a time (the wall of all of them, and the slowest one), then:
    one workload stack's up --refresh, nothing changed | the fleet stack's preview, nothing changed |
    scale one deployment end to end (the fleet stack's up, then only the workload stack of the
    cluster it runs on) | the largest stack's state.

    python benchmarks/engine_scale.py [--layout single|split] [--clusters 2] [--replicas 10 50]
                                      [--parallel 2] [--placement-only 5000]

`--placement-only N` instead times the split layout's fleet stack alone at N planned replicas (no
workload stack, no API server object: clusters, placement and its exports), up then a
nothing-changed preview. Targets (issue 28): creating costs a constant time per resource; a workload
stack of 50 replicas creates in <= 30 s and cycles in <= 15 s; one deployment's change <= 20 s end to
end at 500 replicas; the fleet stack's nothing-changed preview at 5,000 replicas <= 15 s. The figures
measured on the project's 2 cores are in docs/pulumi.md ("When to split, in figures"); the last
(2026-11-26, the benchmark at `nice -n -10`, load average 3 to 15): a lone cluster stack of 50
replicas creates in 25.6 s and cycles in 9.9 s; at 500 replicas over 10 clusters a cluster stack
cycles in 10.5 s and one deployment's change takes 11.5 s end to end; creating costs about 0.08 s
per resource at 53 and at 2,094 resources (0.12 s at 213); the fleet stack's preview at 5,000 takes
7.5 s. All five targets are met there.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import yaml

from modelplane.local.project import STACK, Project
from modelplane.local.servers import Fleet
from modelplane.local.toolset import build_toolset
from tests.e2e.conftest import binaries, install_crds
from tests.e2e.gateways import gateway_addresses

API = "modelplane.ai/v1alpha1"
FLEET_STACK = f"organization/modelplane/{STACK}"


def manifests(clusters: list[str], replicas: int, namespace: str) -> str:
    objects: list[dict[str, Any]] = [{
        "apiVersion": API, "kind": "InferenceClass", "metadata": {"name": "h100-8x"},
        "spec": {"devices": [{"name": "gpu", "driver": "gpu.nvidia.com", "deviceClassName": "gpu.nvidia.com",
                              "count": 8, "attributes": {"productName": {"string": "NVIDIA H100 80GB HBM3"}},
                              "capacity": {"memory": {"value": "81559Mi"}}}]}}]
    for cluster in clusters:
        objects.append({"apiVersion": API, "kind": "InferenceCluster",
                        "metadata": {"name": cluster, "labels": {"bench": cluster}},
                        "spec": {"cluster": {"source": "Existing", "existing": {"kubeconfig": f"{cluster}Kubeconfig",
                                                                                "storageClassName": "shared-rwx"}},
                                 "nodePools": [{"name": "h100", "className": "h100-8x", "nodeCount": 2000}],
                                 "gateway": {"publicInference": True}}})  # loopback servers: nothing to authenticate
    for index in range(replicas):
        objects.append({"apiVersion": API, "kind": "ModelDeployment",
                        "metadata": {"name": f"m{index:05d}", "namespace": namespace},
                        "spec": {"replicas": 1, "clusterSelector": {"matchLabels": {"bench": clusters[index % len(clusters)]}},
                                 "engines": [{"name": "vllm", "members": [{
                                     "role": "Standalone", "nodeSelector": {"devices": [{"name": "gpu", "count": 8, "selectors": [
                                         {"cel": 'device.attributes["gpu.nvidia.com"].productName.startsWith("NVIDIA H100")'}]}]},
                                     "template": {"spec": {"containers": [{"name": "engine",
                                                                           "image": "vllm/vllm-openai:v0.23.0"}]}}}]}]}})
    objects.append({"apiVersion": API, "kind": "ModelService", "metadata": {"name": "chat", "namespace": namespace},
                    "spec": {"endpoints": [{"selector": {"matchLabels": {"modelplane.ai/deployment": "m00000"}}}]}})
    return yaml.safe_dump_all(objects, sort_keys=False)


def timed(run: Callable[[], Any]) -> float:
    start = time.monotonic()
    run()
    return time.monotonic() - start


def state(project: Project, stack: str) -> tuple[int, int]:
    exported = project.run("stack", "export", "--stack", stack).stdout
    return len(exported.encode()), len(json.loads(exported)["deployment"].get("resources") or [])


def state_parts(project: Project, stack: str) -> dict[str, str]:
    """What a stack's state holds (`stack export`, compact JSON): bytes per resource, the share of each
    field of the resources (outputs, of which the Kubernetes objects' managedFields, inputs, the
    engine's stackTrace, dependencies), and the Placement resource's size."""
    resources = json.loads(project.run("stack", "export", "--stack", stack).stdout)["deployment"]["resources"]
    size = lambda value: len(json.dumps(value, separators=(",", ":")))  # noqa: E731
    total = sum(size(r) for r in resources)
    fields: dict[str, int] = {}
    for resource in resources:
        for key, value in resource.items():
            fields[key] = fields.get(key, 0) + size(value)
    managed = sum(size(r["outputs"]["metadata"].get("managedFields", [])) for r in resources
                  if isinstance(r.get("outputs", {}).get("metadata"), dict))
    placement = sum(size(r) for r in resources if r["type"].endswith("modelplane:Placement"))
    share = lambda part: f"{100 * part / total:.0f}%"  # noqa: E731
    return {"bytes per resource": str(total // len(resources)), "outputs": share(fields.get("outputs", 0)),
            "of which managedFields": share(managed), "inputs": share(fields.get("inputs", 0)),
            "stackTrace": share(fields.get("stackTrace", 0) + fields.get("sourcePosition", 0)),
            "dependencies": share(fields.get("dependencies", 0) + fields.get("propertyDependencies", 0)),
            "Placement resource": f"{placement / 1e3:.0f} KB"}


def scale_one(project: Project, text: str) -> None:
    """m00000 (the first ModelDeployment in the text) from one replica to two."""
    project.write_manifests({"fleet.yaml": text.replace("spec:\n  replicas: 1\n", "spec:\n  replicas: 2\n", 1)})


def stack_project(directory: Path, tools: Path, fleet: Fleet, text: str) -> Project:
    project = Project.create(directory, tools)
    project.write_manifests({"fleet.yaml": text})
    project.config("modelplane:manifests[0]", "manifests", path=True)
    project.brownfield()
    for name, cluster in fleet.clusters.items():
        project.config(f"modelplane:{name}Kubeconfig", cluster.kubeconfig(), secret=True)
    return project


def single(project: Project, text: str) -> dict[str, str]:
    row = {"preview (new)": timed(lambda: project.run("preview")),
           "up (create)": timed(lambda: project.run("up", "--yes", "--skip-preview")),
           "preview, nothing changed": timed(lambda: project.run("preview")),
           "up --refresh, nothing changed": timed(lambda: project.run("up", "--yes", "--skip-preview", "--refresh"))}
    scale_one(project, text)
    row["scale one deployment"] = timed(lambda: project.run("up", "--yes", "--skip-preview"))
    size, resources = state(project, STACK)
    return {**{k: f"{v:.1f} s" for k, v in row.items()}, "state": f"{size / 1e6:.1f} MB", "resources": str(resources),
            **state_parts(project, STACK)}


def split(project: Project, text: str, clusters: list[str], parallel: int) -> dict[str, str]:
    project.config("modelplane:role", "fleet")
    for cluster in clusters:
        project.run("stack", "init", cluster)
        for key, value in (("role", "cluster"), ("cluster", cluster), ("fleetStack", FLEET_STACK)):
            project.run("config", "set", "--plaintext", f"modelplane:{key}", value, "--stack", cluster)
    up = lambda stack, *flags: timed(lambda: project.run("up", "--yes", "--skip-preview", *flags, "--stack", stack))  # noqa: E731
    row = {"fleet up (create)": up(STACK)}
    start = time.monotonic()
    with ThreadPoolExecutor(parallel) as pool:
        each = list(pool.map(up, clusters))
    row[f"workload stacks up (create, {parallel} at a time)"] = time.monotonic() - start
    row["slowest workload stack up (create)"] = max(each)
    for cluster in clusters:
        project.run("config", "set", "--plaintext", "--path", f"modelplane:clusterStacks.{cluster}",
                    f"organization/modelplane/{cluster}", "--stack", STACK)
    row["fleet up (enroll)"] = up(STACK)
    row["workload stack up --refresh, nothing changed"] = up(clusters[0], "--refresh")
    row["fleet preview, nothing changed"] = timed(lambda: project.run("preview", "--stack", STACK))
    scale_one(project, text)
    row["scale one deployment (fleet up + its cluster's up)"] = up(STACK) + up(clusters[0])
    sizes = [state(project, stack) for stack in (STACK, *clusters)]
    largest = max(sizes)
    return {**{k: f"{v:.1f} s" for k, v in row.items()}, "largest state": f"{largest[0] / 1e6:.1f} MB",
            "resources (all stacks)": str(sum(count for _, count in sizes)),
            "fleet stack": f"{sizes[0][0] / 1e6:.2f} MB, {sizes[0][1]} resources",
            **{f"fleet stack {k}": v for k, v in state_parts(project, STACK).items()}}


def placement_only(directory: Path, tools: Path, replicas: int, clusters: int) -> dict[str, str]:
    """The fleet stack alone (no API server is contacted: no object is registered without a gateway)."""
    names = [f"c{index:02d}" for index in range(clusters)]
    project = Project.create(directory, tools)
    project.write_manifests({"fleet.yaml": manifests(names, replicas, "bench")})
    project.config("modelplane:manifests[0]", "manifests", path=True)
    project.brownfield()
    project.config("modelplane:role", "fleet")
    for name in names:
        project.config(f"modelplane:{name}Kubeconfig", "apiVersion: v1\nkind: Config\n", secret=True)
    row = {"fleet up": timed(lambda: project.run("up", "--yes", "--skip-preview")),
           "fleet preview, nothing changed": timed(lambda: project.run("preview"))}
    size, resources = state(project, STACK)
    return {**{k: f"{v:.1f} s" for k, v in row.items()}, "state": f"{size / 1e6:.1f} MB", "resources": str(resources),
            **largest_values(project, STACK)}


def largest_values(project: Project, stack: str) -> dict[str, str]:
    """The Placement resource's inputs and outputs and the root stack's outputs (compact JSON), and the
    largest root output: the property values a nothing-changed preview carries and diffs."""
    resources = json.loads(project.run("stack", "export", "--stack", stack).stdout)["deployment"]["resources"]
    size = lambda value: len(json.dumps(value, separators=(",", ":")))  # noqa: E731
    placement = next(r for r in resources if r["type"].endswith("modelplane:Placement"))
    root = next(r for r in resources if r["type"] == "pulumi:pulumi:Stack")["outputs"]
    name = max(root, key=lambda key: size(root[key]))
    return {"Placement inputs": f"{size(placement.get('inputs', {})) / 1e3:.0f} KB",
            "Placement outputs": f"{size(placement.get('outputs', {})) / 1e3:.0f} KB",
            "root outputs": f"{size(root) / 1e3:.0f} KB", "largest root output": f"{name}, {size(root[name]) / 1e3:.0f} KB"}


@contextmanager
def servers(tools: Path, directory: Path, clusters: list[str]) -> Iterator[Fleet]:
    directory.mkdir(parents=True)
    fleet = Fleet(binaries(tools), directory, tuple(clusters)).start()
    try:
        for cluster in fleet.clusters.values():
            install_crds(cluster)
        with gateway_addresses(fleet.clusters):
            yield fleet
    finally:
        fleet.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--layout", choices=("single", "split"), default="single")
    parser.add_argument("--clusters", type=int, default=2)
    parser.add_argument("--replicas", type=int, nargs="+", default=[10, 50])
    parser.add_argument("--parallel", type=int, default=2)
    parser.add_argument("--placement-only", type=int, metavar="REPLICAS")
    args = parser.parse_args()
    tools = build_toolset()
    with tempfile.TemporaryDirectory(prefix="engine-scale-") as scratch:
        if args.placement_only:
            print(json.dumps({"replicas": args.placement_only, "clusters": args.clusters,
                              **placement_only(Path(scratch) / "fleet", tools, args.placement_only, args.clusters)}))
            return
        names = [f"c{index:02d}" for index in range(args.clusters)]
        for replicas in args.replicas:  # fresh servers per size: every stack creates the same cluster-scoped objects
            with servers(tools, Path(scratch) / f"servers-{replicas}", names) as fleet:
                text = manifests(names, replicas, f"bench-{replicas}")
                project = stack_project(Path(scratch) / f"{args.layout}-{replicas}", tools, fleet, text)
                row = single(project, text) if args.layout == "single" else split(project, text, names, args.parallel)
                print(json.dumps({"layout": args.layout, "replicas": replicas, "clusters": args.clusters, **row}),
                      flush=True)


if __name__ == "__main__":
    main()
