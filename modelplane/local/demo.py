"""`make demo`: the real `pulumi preview` and `pulumi up` of the program on a local fleet.

Steps, each announced on one progress line and closed with its time:
1. etcd and two kube-apiservers (`east`, `west`) on 127.0.0.1, with the CRDs of the serving stack
   (Gateway API, LeaderWorkerSet, Inference Extension, Envoy Gateway) applied, as a brownfield
   cluster has them;
2. a stack of the program in `DIRECTORY` (a `file://` backend and a passphrase there) whose
   manifests are examples/local and whose kubeconfigs are the two servers';
3. `pulumi preview`: where every replica will run (the Placement resource's planned inputs) and
   what will be created on each cluster;
4. `pulumi up`, then what landed, read back from each API server;
5. `ml-team/chat` scaled from 2 to 3 replicas, previewed (only the new replica's objects are
   created; the placement and the routes whose weights change are updated) and applied.
The servers are stopped at the end, whatever happened; the directory keeps the stack's state
and the servers' logs until `make demo-clean` (a new run starts from an empty directory, because
its servers are new).

The demo's own stack settings, and why: no Helm chart can be installed offline and no kubelet runs
a pod (`servingStack: false`, `skipAwait: true`), and no Gateway controller assigns addresses
(`gatewayAddresses`: names under the reserved `.invalid` domain, which resolve nowhere). The
closing lines say what a real cluster adds. Run: `python -m modelplane.local.demo [--dir DIR]`.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import yaml

from modelplane.local.project import CHECKOUT, NS, Project, PulumiFailed
from modelplane.local.servers import Cluster, Fleet, ServerError, apply_crds
from modelplane.local.toolset import Toolset, ToolsetError, find_toolset
from modelplane.pulumi.names import SEPARATOR

EXAMPLE = CHECKOUT / "examples" / "local"
CRDS = CHECKOUT / "tests" / "data" / "crds"
SERVING_CRDS = ("gateway-api-v1.5.1-standard.yaml", "leaderworkerset.x-k8s.io_leaderworkersets-v0.9.0.yaml",
                "gateway-api-inference-extension-v1.0.1.yaml", "envoy-gateway-v1.9.0-backends.yaml")
"""The published CRDs the rendered objects need (copies kept in tests/data/crds)."""
CLUSTERS = ("east", "west")
DIRECTORY = CHECKOUT / ".demo"
STACK = "demo"
HF_TOKEN = "hf_local_demo_placeholder"
"""The ModelCache's Hugging Face token: nothing is downloaded here, so any value does."""
GATEWAY_ADDRESSES = {"east": "inference.east.local-demo.invalid", "west": "inference.west.local-demo.invalid",
                     "_fleet": "fleet.local-demo.invalid"}
SCALED = ("chat", 2, 3)
PLACEMENT_TYPE = "pulumi-python:dynamic/modelplane:Placement"
LISTED = {  # kind -> the API path of its collection in a namespace
    "Gateway": "/apis/gateway.networking.k8s.io/v1/namespaces/{ns}/gateways",
    "HTTPRoute": "/apis/gateway.networking.k8s.io/v1/namespaces/{ns}/httproutes",
    "InferencePool": "/apis/inference.networking.k8s.io/v1/namespaces/{ns}/inferencepools",
    "Backend": "/apis/gateway.envoyproxy.io/v1alpha1/namespaces/{ns}/backends",
    "Deployment": "/apis/apps/v1/namespaces/{ns}/deployments",
    "LeaderWorkerSet": "/apis/leaderworkerset.x-k8s.io/v1/namespaces/{ns}/leaderworkersets",
    "Service": "/api/v1/namespaces/{ns}/services",
    "ResourceClaimTemplate": "/apis/resource.k8s.io/v1/namespaces/{ns}/resourceclaimtemplates",
    "PersistentVolumeClaim": "/api/v1/namespaces/{ns}/persistentvolumeclaims",
    "Job": "/apis/batch/v1/namespaces/{ns}/jobs",
    "Secret": "/api/v1/namespaces/{ns}/secrets",
}
NAMESPACES = ("modelplane-system", NS)
REAL_CLUSTER = """\
What a real cluster adds (docs/pulumi.md): the serving stack's Helm charts (Envoy Gateway and its AI
Gateway, LeaderWorkerSet, NFD, the NVIDIA DRA driver; `servingStack: true`, the default), a Gateway
controller that gives each Gateway its address (no `gatewayAddresses`), kubelets and GPUs that run the
pods and the ModelCache's download Job, and `pulumi up` waiting for them to be ready (no `skipAwait`)."""


class DemoError(Exception):
    """A step failed; the message says which and why."""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m modelplane.local.demo", description=__doc__.splitlines()[0])
    parser.add_argument("--dir", type=Path, default=DIRECTORY, help=f"where the stack and servers live "
                                                                     f"(default: {DIRECTORY}; emptied first)")
    args = parser.parse_args(argv)
    try:
        run(args.dir)
    except (DemoError, ToolsetError, ServerError, PulumiFailed) as error:
        say(f"\nmodelplane demo failed: {error}")
        return 1
    return 0


def say(text: str = "") -> None:
    print(text, flush=True)


def shown(path: Path) -> str:
    """A path as the user would type it: relative to the current directory, else from ~."""
    path = path.resolve()
    for base, prefix in ((Path.cwd(), ""), (Path.home(), "~/")):
        if base in path.parents:
            return prefix + str(path.relative_to(base))
    return str(path)


@contextmanager
def step(title: str) -> Iterator[Callable[[str], None]]:
    """A progress line for a long step, closed with its time and what `done(...)` reported."""
    print(f"{title} ...", end="", flush=True)
    started = time.monotonic()
    result: list[str] = []
    try:
        yield result.append
    except BaseException:
        say(" failed")
        raise
    say(f" done in {time.monotonic() - started:.1f} s{': ' + result[-1] if result else ''}")


def run(directory: Path) -> None:
    say("modelplane demo: the real `pulumi preview` and `pulumi up` of the program on a local fleet of two\n"
        "Kubernetes API servers on 127.0.0.1 (east, west). Nothing leaves this machine; everything stops at the end.\n")
    tools = find_toolset(say)
    say(f"tools: {tools.origin}")
    if directory.exists():
        shutil.rmtree(directory)
    directory.mkdir(parents=True)
    fleet = Fleet(tools.binaries, directory / "servers", CLUSTERS)
    try:
        with step(f"[1/5] starting etcd and the kube-apiservers of {' and '.join(CLUSTERS)}"):
            (directory / "servers").mkdir()
            fleet.start()
            for cluster in fleet.clusters.values():
                apply_crds(cluster, [CRDS / name for name in SERVING_CRDS])
        for name, cluster in fleet.clusters.items():
            say(f"      {name}: {cluster.server} (kubeconfig {shown(cluster.kubeconfig_file)})")
        project = stack(directory / "stack", tools, fleet)
        scenario(project, fleet)
    finally:
        fleet.stop()
        say(f"\nservers stopped. The stack's state and the servers' logs stay in {shown(directory)} (`make demo-clean` "
            "removes them).")


def stack(directory: Path, tools: Toolset, fleet: Fleet) -> Project:
    with step(f"[2/5] creating stack {STACK!r} (file:// backend in {shown(directory)})"):
        project = Project.create(directory, tools.path, offline=tools.offline, stack=STACK)
        manifests = {path.name: path.read_text() for path in sorted(EXAMPLE.glob("*.yaml"))}
        project.deploy_to(fleet.clusters, manifests, HF_TOKEN)
        for key, address in GATEWAY_ADDRESSES.items():
            project.config(f"modelplane:gatewayAddresses.{key}", address, path=True)
    return project


def scenario(project: Project, fleet: Fleet) -> None:
    with step("[3/5] pulumi preview") as done:
        preview, _ = project.preview()
        creates = [s for s in preview["steps"] if s["op"] == "create"]
        done(f"{len(creates)} resources to create")
    say("      where every replica will run (the Placement resource's planned inputs):")
    for line in placement_lines(preview):
        say(f"        {line}")
    say("      what will be created, by cluster:")
    for line in by_cluster(creates):
        say(f"        {line}")

    with step("[4/5] pulumi up") as done:
        events = project.up()
        done(summary(events))
    say("      what landed, read back from each API server (kind: namespace/name):")
    for name, cluster in fleet.clusters.items():
        say(f"        {name}:")
        for line in landed(cluster):
            say(f"          {line}")
    outputs = project.outputs()
    say(f"      stack outputs: serviceUrls {json.dumps(outputs['serviceUrls'], sort_keys=True)}")

    deployment, before, after = SCALED
    with step(f"[5/5] scaling ml-team/{deployment} from {before} to {after} replicas: pulumi preview") as done:
        scale(project, deployment, before, after)
        preview, _ = project.preview()
        changed = [s for s in preview["steps"] if s["op"] not in ("same", "read")]
        done(f"{sum(s['op'] == 'create' for s in changed)} to create, "
             f"{sum(s['op'] == 'update' for s in changed)} to update, {sum(s['op'] == 'delete' for s in changed)} "
             "to delete")
    for line in placement_lines(preview, only=f"{NS}/{deployment}"):
        say(f"        {line}")
    for op in ("create", "update", "delete"):
        for item in sorted(f"{op:6} {short_type(s['urn'])} {name_of(s['urn'])}" for s in changed if s["op"] == op):
            say(f"        {item}")
    with step("      pulumi up") as done:
        done(summary(project.up()))
    say("\n" + REAL_CLUSTER)


def scale(project: Project, deployment: str, before: int, after: int) -> None:
    """Edit the stack's copy of the manifests: `replicas: before` -> `after` in the named ModelDeployment."""
    folder = project.directory / "manifests"
    for path in sorted(folder.glob("*.yaml")):
        documents = list(yaml.safe_load_all(path.read_text()))
        for document in documents:
            if (document.get("kind"), document["metadata"].get("name")) == ("ModelDeployment", deployment):
                if document["spec"]["replicas"] != before:
                    raise DemoError(f"{path}: ModelDeployment {deployment} has {document['spec']['replicas']} "
                                    f"replicas, expected {before}")
                document["spec"]["replicas"] = after
                path.write_text(yaml.safe_dump_all(documents, sort_keys=False))
                return
    raise DemoError(f"no ModelDeployment {deployment} in {folder}")


def placement_lines(preview: dict[str, Any], only: str | None = None) -> list[str]:
    """`deployment  scheduled  slot (engine: pool) ...` from the Placement step of a preview."""
    found = [s for s in preview["steps"] if short_type(s["urn"]) == PLACEMENT_TYPE]
    if not found:
        raise DemoError("the preview holds no Placement step")
    deployments = found[0].get("newState", {}).get("inputs", {}).get("deployments", {})
    lines = []
    for key, status in sorted(deployments.items()):
        if only is None or key == only:
            where = ", ".join(f"{slot} ({engines})" for slot, engines in sorted(status["replicas"].items()))
            lines.append(f"{key:14} {status['scheduled']:5} {where}")
    return lines


def by_cluster(steps: list[dict[str, Any]]) -> list[str]:
    """Creates grouped by the cluster their logical name holds (`COMPONENT:CLUSTER:...`, the encoding of
    modelplane.pulumi.names); the rest (components, the placement) is the program's own."""
    groups: dict[str, list[str]] = {}
    for s in steps:
        parts = name_of(s["urn"]).split(SEPARATOR)
        owner = parts[1] if len(parts) > 1 and parts[1] in CLUSTERS else "program"
        groups.setdefault(owner, []).append(short_type(s["urn"]).rsplit(":", 1)[-1])
    lines = []
    for owner in (*CLUSTERS, "program"):
        kinds = groups.get(owner, [])
        counted = ", ".join(f"{kinds.count(k)} {k}" for k in sorted(set(kinds)))
        lines.append(f"{owner}: {len(kinds)} ({counted})")
    return lines


def landed(cluster: Cluster) -> list[str]:
    lines = []
    for kind, path in LISTED.items():
        names = sorted(f"{ns}/{item['metadata']['name']}" for ns in NAMESPACES
                       for item in cluster.request("GET", path.format(ns=ns)).get("items", [])
                       if not (kind == "Service" and item["metadata"]["name"] == "kubernetes"))
        if names:
            lines.append(f"{kind}: {', '.join(names)}")
    return lines


def summary(events: list[dict[str, Any]]) -> str:
    ops: dict[str, int] = {}
    for event in events:
        outputs = event.get("resOutputsEvent")
        if outputs:
            op = outputs["metadata"]["op"]
            ops[op] = ops.get(op, 0) + 1
    return ", ".join(f"{n} {op}d" if op != "same" else f"{n} unchanged" for op, n in sorted(ops.items()))


def name_of(urn: str) -> str:
    return urn.rsplit("::", 1)[-1]


def short_type(urn: str) -> str:
    return urn.rsplit("::", 2)[-2].rsplit("$", 1)[-1]


if __name__ == "__main__":
    sys.exit(main())
