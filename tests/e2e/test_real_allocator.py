"""The real kube-scheduler 1.34.4 and its DRA allocator against our predictions: selector verdicts
at run time, and sub-node packing on a Shared pool.

CEL at run time: every case of the CEL tables that has a device (tests/cel/verdicts.py cases with a
true, false or run-time-error verdict, tests/cel/test_selectors.py's cases, and its seed selectors
on each of its four GPUs) becomes a Node with one ResourceSlice publishing that device, a
ResourceClaim with the selector and a pod pinned to the node. The allocator's verdict is the pod's:
bound (true), refused with "CEL runtime error" (error: Kubernetes fails the whole allocation,
dynamic-resource-allocation structured/internal/stable allocator_stable.go selectorsMatch), or
refused otherwise (false). It must equal ours (`SelectorEvaluator`; a non-bool result is an error in
Kubernetes, cel/compile.go DeviceMatches).

Packing: random states of one Shared pool (C nodes of eight H100, pods claiming 1-8 of them), each
on a pool of its own. States our rule (`scheduling.packing.need`) admits must bind every pod, in a
random creation order; for states it refuses although the devices would add up, each is tried in
several random orders and what the real scheduler did is recorded (`packing-figures.json` beside
the server logs): a stranded pod shows the refusal was needed, none means our rule was stricter
than that scheduler needed in those orders.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from modelplane.cel import Device, SelectorEvaluator
from modelplane.cli import main
from modelplane.scheduling.packing import need
from tests.cel.test_selectors import CASES as SELECTOR_CASES
from tests.cel.test_selectors import FLEET, SEEDS
from tests.cel.verdicts import CASES, Verdict
from tests.e2e.gpu_nodes import Api, add_nodes, namespace, ready_node, scheduled, settle
from modelplane.local.servers import Fleet
from tests.e2e.conftest import binaries
from tests.nvidia import DRIVER, H100, L4

DATA = Path(__file__).parents[1] / "data" / "resourceslices"

GPUS = 8
ANY_DEVICE = {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": "any-device"},
              "spec": {}}


@pytest.fixture(scope="module")
def fleet(tools: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Fleet]:
    running = Fleet(binaries(tools), tmp_path_factory.mktemp("servers"), ("east",), scheduler=True).start()
    try:
        yield running
    finally:
        running.stop()


@pytest.fixture(scope="module")
def api(fleet: Fleet) -> Api:
    return Api.of(fleet.clusters["east"])


def test_classes_and_validate_read_the_live_cluster(api: Api, fleet: Fleet,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    """`modelplane classes --kubeconfig` and `validate --kubeconfig` against this API server (first
    in the module: the cluster holds only these nodes yet)."""
    add_nodes(api, ["gpu-node-a", "gpu-node-b"], "h100", H100, GPUS)
    add_nodes(api, ["gpu-node-c"], "l4", L4, 1)
    kubeconfig = str(fleet.clusters["east"].kubeconfig_file)
    assert main(["classes", "--kubeconfig", kubeconfig]) == 0
    assert capsys.readouterr().out == main_output(["classes", str(DATA / "h100-l4.yaml")], capsys)
    assert main(["validate", str(DATA / "declared.yaml"), "--kubeconfig", f"onprem={kubeconfig}"]) == 0
    assert capsys.readouterr().err == main_output(
        ["validate", str(DATA / "declared.yaml"), "--against-slices", str(DATA / "h100-l4.yaml")], capsys, "err")


def main_output(argv: list[str], capsys: pytest.CaptureFixture[str], stream: str = "out") -> str:
    assert main(argv) == 0
    return getattr(capsys.readouterr(), stream)


def runtime_cases() -> list[tuple[str, str, dict[str, Any]]]:
    cases = [(f"verdicts: {c.name}", c.cel, c.device) for c in CASES
             if c.kubernetes in (Verdict.TRUE, Verdict.FALSE, Verdict.ERROR)]
    cases += [(f"selectors: {c.name}", c.cel, c.device) for c in SELECTOR_CASES]
    cases += [(f"seed: {s.name} on {gpu}", s.cel, device) for s in SEEDS for gpu, device in FLEET.items()]
    return cases


RUNTIME = runtime_cases()


def our_verdict(cel: str, device: dict[str, Any]) -> Verdict:
    result = SelectorEvaluator().evaluate(cel, Device.from_class_device(device))
    if result.matched:
        return Verdict.TRUE
    reason = result.reason or ""
    return Verdict.ERROR if reason.startswith(("error:", "returned ")) else Verdict.FALSE


def published_slice(node: str, device: dict[str, Any]) -> dict[str, Any]:
    published = {"name": "dev-0", "attributes": device.get("attributes") or {},
                 "capacity": device.get("capacity") or {}}
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": node},
            "spec": {"driver": device["driver"], "nodeName": node,
                     "pool": {"name": node, "generation": 1, "resourceSliceCount": 1}, "devices": [published]}}


def pod(name: str, node_selector: dict[str, str], claims: list[dict[str, str]]) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"nodeSelector": node_selector, "resourceClaims": claims,
                     "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
                     "containers": [{"name": "engine", "image": "registry.invalid/engine:0",
                                     "resources": {"claims": [{"name": c["name"]} for c in claims]}}]}}


@pytest.fixture(scope="module")
def allocator_verdicts(api: Api) -> dict[str, tuple[Verdict, str]]:
    """Each runtime case's verdict from the real allocator, with the scheduler's message."""
    namespace(api, "cel")
    api.ensure("/apis/resource.k8s.io/v1/deviceclasses", ANY_DEVICE)
    for index, (_, cel, device) in enumerate(RUNTIME):
        node = f"cel-{index}"
        ready_node(api, {"apiVersion": "v1", "kind": "Node",
                         "metadata": {"name": node, "labels": {"kubernetes.io/hostname": node}}})
        api.create("/apis/resource.k8s.io/v1/resourceslices", published_slice(node, device))
        api.create("/apis/resource.k8s.io/v1/namespaces/cel/resourceclaims", {
            "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"name": node},
            "spec": {"devices": {"requests": [{"name": "device", "exactly": {
                "deviceClassName": "any-device", "selectors": [{"cel": {"expression": cel}}]}}]}}})
        api.create("/api/v1/namespaces/cel/pods", pod(node, {"kubernetes.io/hostname": node},
                                                      [{"name": "device", "resourceClaimName": node}]))
    verdicts = {}
    for found in settle(api, "cel", len(RUNTIME)):
        index = int(found["metadata"]["name"].removeprefix("cel-"))
        condition = scheduled(found) or {}
        message = condition.get("message", "")
        verdict = (Verdict.TRUE if found["spec"].get("nodeName") else
                   Verdict.ERROR if "CEL runtime error" in message else Verdict.FALSE)
        verdicts[RUNTIME[index][0]] = (verdict, message)
    return verdicts


@pytest.mark.parametrize(("name", "cel", "device"), RUNTIME, ids=[case[0] for case in RUNTIME])
def test_the_allocator_and_we_agree(name: str, cel: str, device: dict[str, Any],
                                    allocator_verdicts: dict[str, tuple[Verdict, str]]) -> None:
    verdict, message = allocator_verdicts[name]
    assert verdict is our_verdict(cel, device), f"the allocator: {verdict} ({message})"
    if verdict is Verdict.FALSE:
        assert "cannot allocate all claims" in message, message


# --- packing -------------------------------------------------------------------------------------

STATES_ADMITTED = 24
STATES_REFUSED = 8
ORDERS_PER_REFUSED = 3
SIZES = (1, 1, 2, 2, 3, 4, 4, 5, 6, 8)


def random_states(seed: int = 25) -> tuple[list[tuple[int, list[int]]], list[tuple[int, list[int]]]]:
    """(nodes, devices per pod) states: admitted by `need` (at least half the devices claimed), and
    refused though the devices add up."""
    rng = random.Random(seed)
    admitted: list[tuple[int, list[int]]] = []
    refused: list[tuple[int, list[int]]] = []
    while len(admitted) < STATES_ADMITTED or len(refused) < STATES_REFUSED:
        nodes = rng.choice((2, 3, 4))
        pods = [rng.choice(SIZES) for _ in range(rng.randint(2, 3 * nodes))]
        if sum(pods) > nodes * GPUS:
            continue
        whole = sum(size == GPUS for size in pods)
        shared: dict[tuple[int, ...], int] = {}
        for size in pods:
            if size < GPUS:
                shared[(size,)] = shared.get((size,), 0) + 1
        target = admitted if need((GPUS,), whole, shared) <= nodes else refused
        if target is admitted and sum(pods) < nodes * GPUS // 2:
            continue  # an admitted state worth trying fills at least half the pool's devices
        if len(target) < (STATES_ADMITTED if target is admitted else STATES_REFUSED):
            target.append((nodes, pods))
    return admitted, refused


@pytest.fixture(scope="module")
def packing(api: Api, fleet: Fleet) -> dict[str, Any]:
    """Every state on its own pool, pods created in a random order; what bound and what did not."""
    namespace(api, "packing")
    for size in range(1, GPUS + 1):
        api.create("/apis/resource.k8s.io/v1/namespaces/packing/resourceclaimtemplates", {
            "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate", "metadata": {"name": f"gpus-{size}"},
            "spec": {"spec": {"devices": {"requests": [{"name": "gpu", "exactly": {
                "deviceClassName": DRIVER, "count": size}}]}}}})
    admitted, refused = random_states()
    runs = [("admitted", i, 0, state) for i, state in enumerate(admitted)]
    runs += [("refused", i, order, state) for i, state in enumerate(refused) for order in range(ORDERS_PER_REFUSED)]
    rng = random.Random(2025)
    created = []
    for verdict, index, order, (nodes, pods) in runs:
        pool = f"{verdict[:3]}-{index}-{order}"
        add_nodes(api, [f"{pool}-n{n}" for n in range(nodes)], pool, H100, GPUS)
        sizes = list(pods)
        rng.shuffle(sizes)
        for at, size in enumerate(sizes):
            body = pod(f"{pool}-p{at}-x{size}", {"modelplane.ai/pool": pool},
                       [{"name": "gpu", "resourceClaimTemplateName": f"gpus-{size}"}])
            body["metadata"]["labels"] = {"pool": pool}
            api.create("/api/v1/namespaces/packing/pods", body)
        created.append((verdict, pool, nodes, sizes))
    pods = settle(api, "packing", sum(len(c[3]) for c in created))
    pending: dict[str, list[str]] = {}
    for found in pods:
        if not found["spec"].get("nodeName"):
            pending.setdefault(found["metadata"]["labels"]["pool"], []).append(
                f"{found['metadata']['name']}: {(scheduled(found) or {}).get('message', '')}")
    figures = {"states admitted": len(admitted), "states refused": len(refused),
               "orders per refused state": ORDERS_PER_REFUSED, "pods": len(pods),
               "runs": [{"verdict": v, "pool": pool, "nodes": n, "creation order (devices per pod)": s,
                         "pending": pending.get(pool, [])} for v, pool, n, s in created]}
    stranded = {pool.rsplit("-", 1)[0] for v, pool, *_ in created if v == "refused" and pending.get(pool)}
    figures["refused states with a stranding order found"] = len(stranded)
    figures["refused states where no tried order stranded a pod (our rule stricter there)"] = sorted(
        f"nodes={n} pods={sorted(s)}" for v, pool, n, s in created
        if v == "refused" and pool.endswith("-0") and pool.rsplit("-", 1)[0] not in stranded)
    (fleet.directory / "packing-figures.json").write_text(json.dumps(figures, indent=1))
    return figures


def test_every_admitted_state_binds_every_pod(packing: dict[str, Any]) -> None:
    runs = [run for run in packing["runs"] if run["verdict"] == "admitted"]
    assert len(runs) == STATES_ADMITTED
    assert [run for run in runs if run["pending"]] == []


def test_a_refused_state_strands_only_for_want_of_devices(packing: dict[str, Any]) -> None:
    """What stays Pending in a refused state is the allocator's refusal, never something else."""
    runs = [run for run in packing["runs"] if run["verdict"] == "refused"]
    assert len(runs) == STATES_REFUSED * ORDERS_PER_REFUSED
    for run in runs:
        for line in run["pending"]:
            assert "cannot allocate all claims" in line, line
