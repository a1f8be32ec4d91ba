"""Benchmark: every (selector, device) pair of a realistic fleet, through SelectorEvaluator.

Generates 600+ distinct selectors (memory thresholds in Gi/Mi/G, architecture equality,
compute-capability semver, driver equality, presence tests, && and || combinations, reads of
another vendor's domain) and 38+ distinct devices (NVIDIA L4 to B200 across driver versions,
AMD MI300X, NICs, InfiniBand fabrics), evaluates all pairs with a fresh SelectorEvaluator, and
prints compile time, evaluation time, evaluation count and microseconds per evaluation; then the
same for the pure cel-python reference path (every pair through cel-python's interpreter, no fast
path, no memo) on a sample of the selectors, or on all of them with --full-reference.

Run: .venv/bin/python benchmarks/cel_eval.py [--full-reference]
"""

from __future__ import annotations

import argparse
import itertools
import time
from typing import Any

from celpy.celtypes import BoolType

from modelplane.cel import Device, SelectorEvaluator, reference, syntax
from modelplane.cel.fast import EvalError

GPUS = [  # model, architecture, compute capability, memory as published
    ("L4", "Ada Lovelace", "8.9.0", "23034Mi"),
    ("A10G", "Ampere", "8.6.0", "23028Mi"),
    ("A100-SXM4-40GB", "Ampere", "8.0.0", "40960Mi"),
    ("A100-SXM4-80GB", "Ampere", "8.0.0", "81920Mi"),
    ("H100-SXM5-80GB", "Hopper", "9.0.0", "81559Mi"),
    ("H100-NVL", "Hopper", "9.0.0", "95830Mi"),
    ("H200-SXM-141GB", "Hopper", "9.0.0", "141Gi"),
    ("B200", "Blackwell", "10.0.0", "183359Mi"),
]
DRIVER_VERSIONS = ["535.183.1", "550.90.7", "560.35.3", "570.124.6"]


def gpu(model: str, architecture: str, capability: str, memory: str, driver_version: str) -> dict[str, Any]:
    return {
        "name": "gpu", "claim": "DRA", "driver": "gpu.nvidia.com", "deviceClassName": "gpu.nvidia.com", "count": 8,
        "attributes": {
            "productName": {"string": f"NVIDIA {model}"},
            "architecture": {"string": architecture},
            "cudaComputeCapability": {"version": capability},
            "driverVersion": {"version": driver_version},
            "nvidia.com/fp8": {"bool": architecture in ("Hopper", "Blackwell", "Ada Lovelace")},
        },
        "capacity": {"memory": {"value": memory}},
    }


def devices() -> list[dict[str, Any]]:
    fleet = [gpu(*spec, version) for spec, version in itertools.product(GPUS, DRIVER_VERSIONS)]
    for memory, version in itertools.product(("192Gi", "256Gi"), ("6.2.4", "6.3.1")):
        fleet.append({"name": "gpu", "claim": "DRA", "driver": "gpu.amd.com", "count": 8,
                      "attributes": {"productName": {"string": "AMD Instinct MI300X"},
                                     "architecture": {"string": "CDNA3"}, "driverVersion": {"version": version}},
                      "capacity": {"memory": {"value": memory}}})
    for link, speed in itertools.product(("infiniband", "ethernet"), (200, 400)):
        fleet.append({"name": "nic", "claim": "DRA", "driver": "nic.nvidia.com", "count": 8,
                      "attributes": {"linkType": {"string": link}, "speedGbps": {"int": speed},
                                     "rdma": {"bool": link == "infiniband"}}})
    for fabric in ("ib-fabric-a", "ib-fabric-b"):
        fleet.append({"name": "fabric", "claim": "DRA", "driver": "fabric.example.com", "count": 1,
                      "attributes": {"fabric": {"string": fabric}, "generation": {"version": "2.1.0"}}})
    return fleet


def selectors() -> list[str]:
    memory = 'device.capacity["gpu.nvidia.com"].memory'
    attributes = 'device.attributes["gpu.nvidia.com"]'
    found: list[str] = []
    for size in range(8, 200, 2):
        found.append(f'{memory}.compareTo(quantity("{size}Gi")) >= 0')
        found.append(f'{memory}.compareTo(quantity("{size * 1000}Mi")) >= 0')
        found.append(f'{memory}.isGreaterThan(quantity("{size}G"))')
    for architecture in ("Ada Lovelace", "Ampere", "Hopper", "Blackwell", "Volta"):
        found.append(f'{attributes}.architecture == "{architecture}"')
        found.append(f'{attributes}.architecture != "{architecture}"')
        for size in (20, 40, 80, 120, 140, 180):
            found.append(f'{attributes}.architecture == "{architecture}" && '
                         f'{memory}.compareTo(quantity("{size}Gi")) >= 0')
    for size in range(8, 200, 4):
        found.append(f'{memory}.isLessThan(quantity("{size}Gi"))')
    for first, second in itertools.permutations(("Ada Lovelace", "Ampere", "Hopper", "Blackwell", "CDNA3"), 2):
        found.append(f'{attributes}.architecture == "{first}" || {attributes}.architecture == "{second}"')
    for major, minor in itertools.product(range(7, 11), range(0, 10)):
        found.append(f'{attributes}.cudaComputeCapability.isGreaterThan(semver("{major}.{minor}.0"))')
        found.append(f'{attributes}.cudaComputeCapability.compareTo(semver("{major}.{minor}.0")) >= 0')
        for size in (40, 80, 141):
            found.append(f'{attributes}.cudaComputeCapability.compareTo(semver("{major}.{minor}.0")) >= 0 && '
                         f'{memory}.compareTo(quantity("{size}Gi")) >= 0')
    for version in DRIVER_VERSIONS + ["545.0.0", "555.0.0"]:
        found.append(f'{attributes}.driverVersion.isLessThan(semver("{version}"))')
    for driver in ("gpu.nvidia.com", "gpu.amd.com", "nic.nvidia.com"):
        found.append(f'device.driver == "{driver}"')
        found.append(f'"{driver}" in device.attributes')
        found.append(f'"{driver}" in device.capacity')
    for size in (64, 128, 192, 256):
        found.append(f'device.capacity["gpu.amd.com"].memory.compareTo(quantity("{size}Gi")) >= 0')
        found.append(f'device.attributes["gpu.amd.com"].architecture == "CDNA3" || '
                     f'{memory}.compareTo(quantity("{size}Gi")) >= 0')
    for link, speed in itertools.product(("infiniband", "ethernet"), (100, 200, 400)):
        found.append(f'device.attributes["nic.nvidia.com"].linkType == "{link}" && '
                     f'device.attributes["nic.nvidia.com"].speedGbps >= {speed}')
    found.append('!("gpu.amd.com" in device.attributes) && device.attributes["nvidia.com"].fp8')
    found.append('device.attributes["nvidia.com"].fp8')
    found.append('device.attributes["nic.nvidia.com"].rdma')
    found.append('device.attributes["fabric.example.com"].fabric in ["ib-fabric-a", "ib-fabric-c"]')
    found.append(f'{attributes}.productName.startsWith("NVIDIA H")')
    found.append(f'{attributes}.architecture in ["Hopper", "Blackwell"] && has({attributes}.driverVersion)')
    return list(dict.fromkeys(found))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--full-reference", action="store_true", help="run the reference on every selector")
    args = parser.parse_args()
    exprs, fleet = selectors(), [Device.from_class_device(d) for d in devices()]
    assert len(set(fleet)) == len(fleet), "devices must be distinct"
    pairs = len(exprs) * len(fleet)
    print(f"{len(exprs)} distinct selectors x {len(fleet)} distinct devices = {pairs} pairs")

    syntax.parse_tree("true")  # build the lark tables (cel-python's interpreter needs them) outside the timings
    evaluator = SelectorEvaluator()
    start = time.perf_counter()
    for expression in exprs:
        evaluator.program(expression)
    compiled = time.perf_counter()
    matches = sum(evaluator.evaluate(e, d).matched for e in exprs for d in fleet)
    done = time.perf_counter()
    fast = sum(evaluator.program(e).fast for e in exprs)
    print(f"fast path:  compile {compiled - start:.3f} s ({evaluator.compilations} compilations, "
          f"{fast} on closures), evaluate {done - compiled:.3f} s, {evaluator.evaluations} evaluations "
          f"({(done - compiled) / max(evaluator.evaluations, 1) * 1e6:.1f} us/evaluation, "
          f"{(done - compiled) / pairs * 1e6:.2f} us/pair), total {done - start:.3f} s, {matches} matches")

    sample = exprs if args.full_reference else exprs[:: max(len(exprs) // 60, 1)]
    start = time.perf_counter()
    trees = [syntax.parse_tree(e) for e in sample]
    compiled = time.perf_counter()
    reference_matches = 0
    for tree in trees:
        for device in fleet:
            try:
                value = reference.evaluate(tree, device)
            except EvalError:
                continue
            reference_matches += isinstance(value, BoolType) and bool(value)
    done = time.perf_counter()
    count = len(sample) * len(fleet)
    print(f"reference:  {len(sample)} selectors, compile {compiled - start:.3f} s, evaluate {done - compiled:.3f} s, "
          f"{count} evaluations ({(done - compiled) / count * 1e6:.1f} us/evaluation, {reference_matches} matches); "
          f"all {pairs} pairs would take about {(done - compiled) / count * pairs:.1f} s")


if __name__ == "__main__":
    main()
