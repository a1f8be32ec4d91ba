"""Benchmark: plan a generated fleet (issues 3 and 9): load, place, re-place, memory, the CLI.

Generates, deterministically from --seed, 50 InferenceClasses (ten GPU models x 1/2/4/8 GPUs per
node, the 8-GPU ones also on InfiniBand), --clusters clusters of 8 pools (10% tainted, labelled
with one of six regions), and --deployments ModelDeployments: 10% Leader + Worker gangs over
InfiniBand with a ModelCache, 5% prefill/decode pairs, the rest Standalone with copies; 30% with a
clusterSelector, 5% tolerating the taint. Teams ask for hardware like a GPU that exists, with
floors under what it publishes (about 5% ask for more memory than any GPU has, so short
deployments and their explanations are measured too). Replicas are scaled so that the fleet's
demand in nodes is --load of its capacity. Then it measures, in one process:
  load+validate  the YAML text -> validated models (modelplane.api.load_sources)
  place          place() with no previous placement
  re-place       place() with the full previous placement (every replica retained; must move nothing)
and prints wall time (best and median of --repeat) with the CPU time of the best run, the CEL work,
the process's peak RSS, and the Pulumi Placement provider's check() with no previous placement (it
plans) and on inputs that did not change (every preview of an unchanged stack: it verifies the
previous placement, `scheduling.verify`). With --cli it also times whole `modelplane plan DIR
--format json` processes (interpreter start to exit), cold, with --state and with a one-pool
`--what-if` edit (raising the pool, and lowering it), wall and CPU (best of --repeat). The
processes run as an installed `modelplane` does: with Python's bytecode cache (pip compiles an
installed package; a source checkout writes its cache on the first run). An environment that sets
PYTHONDONTWRITEBYTECODE=1 (this sandbox does) never writes it and compiles modelplane's modules in
every process: the benchmark prints what that compilation costs.

    python benchmarks/plan_fleet.py [--clusters 100] [--deployments 1000] [--load 0.8] [--seed 7]
                                    [--repeat 3] [--cli] [--shape standard|varied]

--shape varied builds the second fleet shape (issue 26, `varied_fleet_yaml`): more kinds of
deployment per replica (two device kinds, many distinct selectors, cluster and cache selectors,
taints on half the clusters, larger gangs, more prefill/decode pairs and short deployments).

Targets (issue 9): 1,000 x 10,000: load + place <= 15 s, re-place <= 5 s, peak RSS <= 1.5 GB;
100 x 1,000 with --cli: <= 2 s cold, <= 1 s with --state, check() unchanged well under 1 s.
The README's "Performance" section has the figures and where each process spends its time.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import yaml

from modelplane.api import load_sources
from modelplane.cel import SelectorEvaluator
from modelplane.cel.program import compile_selector
from modelplane.scheduling import place

T = TypeVar("T")
API = "modelplane.ai/v1alpha1"
GPUS = [  # product, driver, architecture, compute capability, memory as the driver publishes it
    ("NVIDIA L4", "gpu.nvidia.com", "Ada Lovelace", "8.9.0", "23034Mi"),
    ("NVIDIA A10G", "gpu.nvidia.com", "Ampere", "8.6.0", "23028Mi"),
    ("NVIDIA L40S", "gpu.nvidia.com", "Ada Lovelace", "8.9.0", "46068Mi"),
    ("NVIDIA A100-SXM4-40GB", "gpu.nvidia.com", "Ampere", "8.0.0", "40960Mi"),
    ("NVIDIA A100-SXM4-80GB", "gpu.nvidia.com", "Ampere", "8.0.0", "81920Mi"),
    ("NVIDIA H100 80GB HBM3", "gpu.nvidia.com", "Hopper", "9.0.0", "81559Mi"),
    ("NVIDIA H200", "gpu.nvidia.com", "Hopper", "9.0.0", "143771Mi"),
    ("NVIDIA B200", "gpu.nvidia.com", "Blackwell", "10.0.0", "183359Mi"),
    ("AMD Instinct MI300X", "gpu.amd.com", "CDNA3", "9.4.2", "196592Mi"),
    ("AMD Instinct MI325X", "gpu.amd.com", "CDNA3", "9.4.2", "262128Mi"),
]
COUNTS = (1, 2, 4, 8)
REGIONS = ("us-east", "us-west", "us-central", "eu-west", "eu-north", "asia-east")
POOLS = 8
KV_TRANSFER = '--kv-transfer-config={"kv_connector":"NixlConnector","kv_role":"kv_both"}'
FABRIC = {"name": "fabric", "selectors": [{"cel": 'device.attributes["fabric.modelplane.ai"].type == "InfiniBand"'}]}


def classes(rng: random.Random) -> list[dict[str, Any]]:
    out = []
    for product, driver, arch, cc, memory in GPUS:
        for count in COUNTS:
            for fabric in ((False, True) if count == 8 else (False,)):
                devices = [{"name": "gpu", "driver": driver, "deviceClassName": driver, "count": count,
                            "attributes": {"productName": {"string": product}, "architecture": {"string": arch},
                                           "cudaComputeCapability" if driver == "gpu.nvidia.com" else "gfxVersion":
                                               {"version": cc},
                                           "driverVersion": {"version": rng.choice(["560.35.3", "570.124.6"])}},
                            "capacity": {"memory": {"value": memory}}}]
                if fabric:
                    devices.append({"name": "fabric", "claim": "Synthetic", "driver": "fabric.modelplane.ai",
                                    "attributes": {"type": {"string": "InfiniBand"}, "rateGbps": {"int": 400}}})
                name = f"{product.lower().replace(' ', '-').replace('_', '-')}-{count}x" + ("-ib" if fabric else "")
                out.append({"apiVersion": API, "kind": "InferenceClass", "metadata": {"name": name},
                            "spec": {"devices": devices}})
    return out


def clusters(rng: random.Random, class_names: list[str], count: int) -> list[dict[str, Any]]:
    out = []
    for index in range(count):
        pools = []
        for p in range(POOLS):
            nodes = rng.randint(2, 14)
            pool: dict[str, Any] = {"name": f"pool{p}", "className": rng.choice(class_names), "nodeCount": nodes}
            if rng.random() < 0.5:
                pool["maxNodeCount"] = nodes + rng.randint(1, 16)
            if pool["className"].endswith("-ib"):
                pool["fabric"] = {"type": "InfiniBand", "infiniband": {"fabric": f"fabric-{index % 3}"}}
            pools.append(pool)
        taints = [{"key": "dedicated", "value": "batch", "effect": "NoSchedule"}] if rng.random() < 0.1 else []
        out.append({"apiVersion": API, "kind": "InferenceCluster",
                    "metadata": {"name": f"cluster-{index:04d}",
                                 "labels": {"region": rng.choice(REGIONS), "tier": rng.choice(["prod", "dev"])}},
                    "spec": {"cluster": {"source": "Existing", "existing": {"kubeconfig": f"kubeconfig{index}",
                                                                            "storageClassName": "filestore-rwx"}},
                             "taints": taints, "nodePools": pools,
                             "gateway": {"auth": {"apiKeysSecret": "inference-api-keys"}}}})
    return out


def requirement(rng: random.Random, gpu: tuple[str, str, str, str, str], impossible: bool) -> list[str]:
    """CEL selectors an ML team would write for hardware like `gpu`: a memory floor at or under
    what it publishes (in Gi, Mi or G; the H100's 81559Mi misses an 80Gi floor), maybe its architecture,
    a compute-capability or driver-version floor. An impossible ask wants more memory than any GPU has."""
    _, driver, arch, cc, memory = gpu
    floor = 400 if impossible else rng.randint(8, int(memory.removesuffix("Mi")) // 1024)
    amount = rng.choice([f"{floor}Gi", f"{floor}Gi", f"{floor * 1024}Mi", f"{floor}G"])
    chosen = [f'device.capacity["{driver}"].memory.compareTo(quantity("{amount}")) >= 0']
    shape = rng.random()
    if shape < 0.25:
        chosen.append(f'device.attributes["{driver}"].architecture == "{arch}"')
    elif shape < 0.4 and driver == "gpu.nvidia.com":
        chosen.append(f'device.attributes["{driver}"].cudaComputeCapability.compareTo(semver("{cc}")) >= 0')
    elif shape < 0.5:
        chosen = [f'device.driver == "{driver}" && {chosen[0]}']
    elif shape < 0.6:
        floor = f"5{rng.randint(50, 69)}.0.0"
        chosen.append(f'device.attributes["{driver}"].driverVersion.isGreaterThan(semver("{floor}"))')
    return chosen


def with_args(template: dict[str, Any], *args: str) -> dict[str, Any]:
    container = template["spec"]["containers"][0]
    return {"spec": {"containers": [{**container, "args": [*container["args"], *args]}]}}


def deployments(rng: random.Random, count: int) -> tuple[list[dict[str, Any]], list[int]]:
    """The ModelDeployments (and ModelCaches) and, per deployment, the nodes one replica costs."""
    out: list[dict[str, Any]] = []
    costs: list[int] = []

    def gpu_request() -> dict[str, Any]:
        return {"name": "gpu", "count": rng.choice(COUNTS),
                "selectors": [{"cel": c} for c in requirement(rng, rng.choice(GPUS), rng.random() < 0.05)]}

    for index in range(count):
        gpu = gpu_request()
        template = {"spec": {"containers": [{"name": "engine", "image": "vllm/vllm-openai:v0.23.0",
                                             "args": [f"--model=org/model-{index}"]}]}}
        kind = rng.random()
        namespace = f"team-{index % 20}"
        spec: dict[str, Any] = {"replicas": rng.randint(1, 6)}
        if kind < 0.1:  # a gang over InfiniBand
            gpu["count"] = 8
            node = {"devices": [gpu, FABRIC]}
            workers = rng.randint(1, 2)
            spec["engines"] = [{"name": "gang", "members": [
                {"role": "Leader", "nodeSelector": node, "template": template},
                {"role": "Worker", "worker": {"nodes": workers}, "nodeSelector": node, "template": template}]}]
            spec["modelCacheRef"] = {"name": f"weights-{index}"}
            out.append({"apiVersion": API, "kind": "ModelCache", "metadata": {"name": f"weights-{index}",
                                                                              "namespace": namespace},
                        "spec": {"huggingFace": {"repo": f"org/model-{index}", "sizeGiB": 500}}})
            costs.append(1 + workers)
        elif kind < 0.15:  # prefill/decode, configured to hand the KV cache over
            spec["serving"] = {"mode": "PrefillDecode"}
            spec["engines"] = [
                {"name": "prefill", "phase": "Prefill", "members": [
                    {"nodeSelector": {"devices": [gpu]}, "template": with_args(template, KV_TRANSFER)}]},
                {"name": "decode", "phase": "Decode", "members": [
                    {"nodeSelector": {"devices": [gpu_request()]},
                     "template": with_args(template, KV_TRANSFER, "--port=8200")}]}]
            costs.append(2)
        else:
            copies = rng.choice([1, 1, 2])
            spec["engines"] = [{"name": "engine", "copies": copies,
                                "members": [{"nodeSelector": {"devices": [gpu]}, "template": template}]}]
            costs.append(copies)
        if rng.random() < 0.3:
            spec["clusterSelector"] = {"matchLabels": {"region": rng.choice(REGIONS)}}
        if rng.random() < 0.05:
            spec["tolerations"] = [{"key": "dedicated", "operator": "Exists"}]
        out.append({"apiVersion": API, "kind": "ModelDeployment",
                    "metadata": {"name": f"model-{index:05d}", "namespace": namespace}, "spec": spec})
    return out, costs


def scale_to_load(workloads: list[dict[str, Any]], costs: list[int], capacity: int, load: float) -> None:
    """Scale every deployment's replicas (at least 1) so that demand in nodes is `load` of capacity."""
    mine = [doc for doc in workloads if doc["kind"] == "ModelDeployment"]
    demand = sum(doc["spec"]["replicas"] * cost for doc, cost in zip(mine, costs, strict=True))
    factor = load * capacity / demand
    for doc in mine:
        doc["spec"]["replicas"] = max(1, round(doc["spec"]["replicas"] * factor))


def fleet_yaml(clusters_: int, deployments_: int, load: float, seed: int) -> str:
    rng = random.Random(seed)
    class_docs = classes(rng)
    cluster_docs = clusters(rng, [c["metadata"]["name"] for c in class_docs], clusters_)
    workload_docs, costs = deployments(rng, deployments_)
    capacity = sum(p.get("maxNodeCount", p["nodeCount"]) for c in cluster_docs for p in c["spec"]["nodePools"])
    scale_to_load(workload_docs, costs, capacity, load)
    dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
    return yaml.dump_all(class_docs + cluster_docs + workload_docs, Dumper=dumper, sort_keys=False)


NIC = "rdma.modelplane.ai"


def varied_fleet_yaml(clusters_: int, deployments_: int, load: float, seed: int) -> str:
    """The second shape (issue 26), built to stress what the first does not: every 8-GPU class also
    publishes 8 RDMA NICs for DRA (a second device kind), half the clusters are tainted, 70% of the
    deployments have a clusterSelector (a third on two labels), 40% a ModelCache staged only in
    one region (the one the deployment selects, if it selects one), 30% of Standalone members ask for a NIC too (two requests, two kinds), gangs have
    2-4 workers (20%), 20% are prefill/decode pairs, memory floors are drawn in Mi (many distinct
    selectors), and 15% ask for more memory than any GPU has (more short deployments)."""
    rng = random.Random(seed)
    class_docs = classes(rng)
    for doc in class_docs:
        devices = doc["spec"]["devices"]
        if devices[0]["count"] == 8:
            devices.append({"name": "nic", "driver": NIC, "deviceClassName": NIC, "count": 8,
                            "attributes": {"linkGbps": {"int": rng.choice([200, 400])}}})
    cluster_docs = clusters(rng, [c["metadata"]["name"] for c in class_docs], clusters_)
    for doc in cluster_docs:
        doc["metadata"]["labels"]["zone"] = rng.choice("abc")
        doc["spec"]["taints"] = [{"key": "dedicated", "value": "batch", "effect": "NoSchedule"}] \
            if rng.random() < 0.5 else []
    out: list[dict[str, Any]] = []
    costs: list[int] = []

    def gpu_request(count: int | None = None) -> dict[str, Any]:
        gpu, impossible = rng.choice(GPUS), rng.random() < 0.15
        selectors = requirement(rng, gpu, impossible)
        floor = 409600 if impossible else rng.randint(8192, int(gpu[4].removesuffix("Mi")))
        selectors.append(f'device.capacity["{gpu[1]}"].memory.compareTo(quantity("{floor}Mi")) >= 0')
        return {"name": "gpu", "count": count or rng.choice(COUNTS), "selectors": [{"cel": c} for c in selectors]}

    def nic_request() -> dict[str, Any]:
        return {"name": "nic", "count": 1,
                "selectors": [{"cel": f'device.driver == "{NIC}" && device.attributes["{NIC}"].linkGbps >= '
                                      f'{rng.choice([100, 200, 400])}'}]}

    for index in range(deployments_):
        template = {"spec": {"containers": [{"name": "engine", "image": "vllm/vllm-openai:v0.23.0",
                                             "args": [f"--model=org/model-{index}"]}]}}
        kind = rng.random()
        namespace = f"team-{index % 40}"
        spec: dict[str, Any] = {"replicas": rng.randint(1, 6)}
        if kind < 0.2:  # a larger gang over InfiniBand
            node = {"devices": [gpu_request(8), FABRIC]}
            workers = rng.randint(2, 4)
            spec["engines"] = [{"name": "gang", "members": [
                {"role": "Leader", "nodeSelector": node, "template": template},
                {"role": "Worker", "worker": {"nodes": workers}, "nodeSelector": node, "template": template}]}]
            costs.append(1 + workers)
        elif kind < 0.4:  # prefill/decode
            spec["serving"] = {"mode": "PrefillDecode"}
            spec["engines"] = [
                {"name": "prefill", "phase": "Prefill", "members": [
                    {"nodeSelector": {"devices": [gpu_request()]}, "template": with_args(template, KV_TRANSFER)}]},
                {"name": "decode", "phase": "Decode", "members": [
                    {"nodeSelector": {"devices": [gpu_request()]},
                     "template": with_args(template, KV_TRANSFER, "--port=8200")}]}]
            costs.append(2)
        else:
            copies = rng.choice([1, 1, 2])
            requests = [gpu_request(8), nic_request()] if rng.random() < 0.3 else [gpu_request()]
            spec["engines"] = [{"name": "engine", "copies": copies,
                                "members": [{"nodeSelector": {"devices": requests}, "template": template}]}]
            costs.append(copies)
        region = rng.choice(REGIONS)
        if rng.random() < 0.4:  # staged in the region the deployment selects, if it selects one
            spec["modelCacheRef"] = {"name": f"weights-{index}"}
            out.append({"apiVersion": API, "kind": "ModelCache", "metadata": {"name": f"weights-{index}",
                                                                              "namespace": namespace},
                        "spec": {"huggingFace": {"repo": f"org/model-{index}", "sizeGiB": 200},
                                 "clusterSelector": {"matchLabels": {"region": region}}}})
        if rng.random() < 0.7:
            labels = {"region": region}
            if rng.random() < 0.33:
                labels["tier"] = rng.choice(["prod", "dev"])
            spec["clusterSelector"] = {"matchLabels": labels}
        if rng.random() < 0.5:
            spec["tolerations"] = [{"key": "dedicated", "operator": "Exists"}]
        out.append({"apiVersion": API, "kind": "ModelDeployment",
                    "metadata": {"name": f"model-{index:05d}", "namespace": namespace}, "spec": spec})
    capacity = sum(p.get("maxNodeCount", p["nodeCount"]) for c in cluster_docs for p in c["spec"]["nodePools"])
    scale_to_load(out, costs, capacity, load)
    dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
    return yaml.dump_all(class_docs + cluster_docs + out, Dumper=dumper, sort_keys=False)


SHAPES = {"standard": fleet_yaml, "varied": varied_fleet_yaml}


def timed(repeat: int, run: Callable[[bool], T]) -> tuple[T, str]:
    """Run `run` `repeat` times; the first result, and the wall-clock best and median with the CPU
    time of the best run (a busy machine shows as a gap between wall and CPU). Each run starts after a
    full collection, so that neither its time nor the peak RSS depends on when the collector frees
    the earlier runs' placements (they hold reference cycles), and runs with the collector off, as
    the entry points run the library (`cli.run`, the Pulumi program, the Placement provider's check)."""
    walls, cpus, result = [], [], None
    for index in range(repeat):
        gc.collect()
        gc.disable()
        wall, cpu = time.perf_counter(), time.process_time()
        value = run(index == 0)
        walls.append(time.perf_counter() - wall)
        cpus.append(time.process_time() - cpu)
        gc.enable()
        result = value if index == 0 else result
    best = min(range(repeat), key=walls.__getitem__)
    return result, f"{walls[best]:.2f} s best, {statistics.median(walls):.2f} s median, {cpus[best]:.2f} s CPU"


def timed_process(repeat: int, argv: list[str], env: dict[str, str]) -> str:
    """A whole process, `repeat` times: wall best and median, and the CPU time (user + system) of the best."""
    walls, cpus = [], []
    for _ in range(repeat):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
        walls.append(time.perf_counter() - start)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpus.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    best = min(range(repeat), key=walls.__getitem__)
    return f"{walls[best]:.2f} s best, {statistics.median(walls):.2f} s median, {cpus[best]:.2f} s CPU"


def cli(text: str, repeat: int, what_if: list[str]) -> tuple[str, str, list[str]]:
    """`modelplane plan DIR --format json`, cold and with --state, and with each `--what-if` edit
    of `what_if`, as separate processes."""
    cached = {name: value for name, value in os.environ.items() if name != "PYTHONDONTWRITEBYTECODE"}
    with tempfile.TemporaryDirectory() as directory:
        fleet = Path(directory) / "fleet"
        fleet.mkdir()
        (fleet / "fleet.yaml").write_text(text)
        state = Path(directory) / "state.json"
        command = [sys.executable, "-m", "modelplane", "plan", str(fleet), "--format", "json"]
        subprocess.run([*command, "--out", str(state)], check=True, stderr=subprocess.DEVNULL, env=cached)
        cold = timed_process(repeat, command, cached)
        warm = timed_process(repeat, [*command, "--state", str(state)], cached)
        again = json.loads(subprocess.run([*command, "--state", str(state)], check=True, capture_output=True,
                                          text=True, env=cached).stdout)
        before = json.loads(state.read_text())
        assert again["replicas"] == before["replicas"], "re-planning with --state must move nothing"
        edited = [timed_process(repeat, [*command, "--what-if", edit], cached) for edit in what_if]
    return cold, warm, edited


def what_if_edits(manifests: Any) -> list[str]:
    """Two one-pool edits of the first cluster's first pool: 4 more nodes (`plan --what-if` plans the
    raise again from the first stage it can change) and 1 fewer (it plans both fleets from scratch)."""
    cluster = manifests.fleet.clusters[0]
    pool = cluster.spec.node_pools[0]
    return [f"pool {cluster.name}/{pool.name} nodes={pool.capacity + 4}",
            f"pool {cluster.name}/{pool.name} nodes={max(pool.capacity - 1, 0)}"]


def compile_cost() -> str:
    """What a process without modelplane's bytecode cache pays first: compiling its modules."""
    import modelplane

    sources = sorted(Path(modelplane.__file__).parent.rglob("*.py"))
    start = time.process_time()
    for source in sources:
        compile(source.read_text(), str(source), "exec", dont_inherit=True)
    cost = time.process_time() - start
    return (f"{cost:.2f} s CPU to compile modelplane's {len(sources)} modules (every CLI process pays it "
            "where no cache is written, e.g. PYTHONDONTWRITEBYTECODE=1)")


def provider_checks(manifests: Any, repeat: int) -> tuple[str, str]:
    """The Placement provider's check() with no previous placement (it plans), and when its inputs and
    the previous placement did not change (it loads and verifies the placement: `scheduling.verify`)."""
    from modelplane.api import dump_objects
    from modelplane.pulumi.placement import PlacementProvider, objects_text

    def wire(value: Any) -> Any:  # through the engine: every number a double
        return json.loads(json.dumps(value), parse_int=float)

    def accepted(result: Any) -> Any:
        # A check that fails returns at once: its time would measure the error, not the provider.
        if result.failures:
            raise SystemExit("check() refused the benchmark's inputs: " + "; ".join(
                f"{failure.property}: {failure.reason}" for failure in result.failures))
        return result

    provider = PlacementProvider()
    news = wire({"objects": objects_text(dump_objects(manifests)), "strict": False})
    checked, planning = timed(repeat, lambda _: accepted(provider.check({}, news)))
    olds = wire(checked.inputs)
    _, unchanged = timed(repeat, lambda _: accepted(provider.check(olds, news)))
    return planning, unchanged


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--clusters", type=int, default=100)
    parser.add_argument("--deployments", type=int, default=1000)
    parser.add_argument("--load", type=float, default=0.8, help="demand in nodes as a share of the fleet's capacity")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--repeat", type=int, default=3, help="runs per measurement (best and median are shown)")
    parser.add_argument("--cli", action="store_true", help="also time whole `modelplane plan` processes")
    parser.add_argument("--shape", choices=sorted(SHAPES), default="standard",
                        help="the fleet generator: the first shape, or the second (varied_fleet_yaml)")
    args = parser.parse_args()
    text = SHAPES[args.shape](args.clusters, args.deployments, args.load, args.seed)

    manifests, load_times = timed(1, lambda _: load_sources([("fleet.yaml", text)]))
    evaluator = SelectorEvaluator()
    cold, cold_times = timed(args.repeat, lambda first: place(manifests.fleet, manifests.workloads,
                                                              evaluator=evaluator if first else None))
    again, replan_times = timed(args.repeat, lambda _: place(manifests.fleet, manifests.workloads, cold))
    assert again.to_json() == cold.to_json(), "re-planning with the previous placement must move nothing"

    distinct = {s.cel for d in manifests.workloads.deployments for e in d.spec.engines for m in e.members
                if m.node_selector for r in m.node_selector.devices for s in r.selectors}
    desired = sum(d.spec.replicas for d in manifests.workloads.deployments)
    short = sum(1 for s in cold.deployments.values() if s.short)
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"fleet:        {args.shape} shape, {len(manifests.fleet.clusters)} clusters x {POOLS} pools, {len(manifests.fleet.classes)} "
          f"classes, {len(manifests.workloads.deployments)} deployments, {len(distinct)} distinct selectors, "
          f"load {args.load:.0%}, seed {args.seed}")
    print(f"replicas:     {len(cold.replicas)} placed of {desired} desired ({short} deployments short)")
    print(f"load+validate:{load_times} ({len(text) / 1e6:.1f} MB of YAML)")
    print(f"place:        {cold_times}")
    print(f"re-place:     {replan_times} (every replica retained, nothing moves)")
    print(f"CEL:          {evaluator.compilations} compilations, {evaluator.evaluations} evaluations "
          f"({compile_selector.cache_info().misses} compiled in the process: load, place and re-place)")
    print(f"peak RSS:     {peak_mb:.0f} MB (whole process, generator and YAML included)")
    if args.cli:
        edits = what_if_edits(manifests)
        cold_cli, warm_cli, edited_cli = cli(text, args.repeat, edits)
        print(f"CLI cold:     {cold_cli}   (modelplane plan --format json, a whole process)")
        print(f"CLI --state:  {warm_cli}")
        for edit, figures in zip(edits, edited_cli, strict=True):
            print(f"CLI what-if:  {figures}   (--what-if '{edit}')")
        print(f"bytecode:     {compile_cost()}")
    planning, unchanged = provider_checks(manifests, args.repeat)
    print(f"check() new:  {planning}   (Pulumi provider, no previous placement: loads and plans)")
    print(f"check() same: {unchanged}   (Pulumi provider, inputs unchanged: loads and verifies)")


if __name__ == "__main__":
    main()
