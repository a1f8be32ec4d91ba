"""Class devices in the InferenceClass shape, for the CEL tests: keyword defaults, one line each;
and the case type of the library tables (an expression and whether it matches)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Expression:
    name: str
    cel: str
    want: bool


def gpu(memory: str, architecture: str, capability: str, *, driver: str = "gpu.nvidia.com",
        extra: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "name": "gpu", "claim": "DRA", "driver": driver, "deviceClassName": driver, "count": 8,
        "attributes": {"architecture": {"string": architecture}, "cudaComputeCapability": {"version": capability},
                       **(extra or {})},
        "capacity": {"memory": {"value": memory}},
    }


L4 = gpu("24Gi", "Ada Lovelace", "8.9.0")
A100_80 = gpu("80Gi", "Ampere", "8.0.0")
H100 = gpu("81559Mi", "Hopper", "9.0.0", extra={"nvidia.com/fp8": {"bool": True}, "index": {"int": 0}})
H200 = gpu("141Gi", "Hopper", "9.0.0")
MI300X = {"name": "gpu", "claim": "DRA", "driver": "gpu.amd.com", "count": 8,
          "attributes": {"architecture": {"string": "CDNA3"}}, "capacity": {"memory": {"value": "192Gi"}}}
NIC = {"name": "nic", "claim": "DRA", "driver": "nic.nvidia.com", "count": 1,
       "attributes": {"linkType": {"string": "infiniband"}}}
BARE = {"name": "gpu", "driver": "gpu.nvidia.com", "count": 1}
