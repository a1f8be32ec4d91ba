"""ResourceSlices as AMD's DRA driver publishes an Instinct MI300X: fixtures for the e2e oracle.

Provenance (ours; no driver output is copied): ROCm/k8s-gpu-dra-driver at commit 2622427226d5.
- docs/driver-attributes.md: a full GPU is named `gpu-<cardIndex>-<renderIndex>` under driver
  `gpu.amd.com`, with strings `type` ("amdgpu"), `pciAddr`, `deviceID`, `family`, `productName`,
  `driverSrcVersion`, `partitionProfile`; ints `cardIndex`, `renderIndex`; version `driverVersion`;
  the PCIe root as `resource.kubernetes.io/pcieRoot`; capacities `memory`, `computeUnits`, `simdUnits`.
- docs/demo.md's ResourceSlice of an MI300X node: productName AMD_Instinct_MI300X_OAM, family AI,
  partitionProfile spx_nps1, driverVersion 6.12.12, memory 196592Mi, 304 compute units, 1216 SIMD
  units (the values examples/amd-mi300x declares).
- helm-charts-k8s/templates/deviceclass.yaml: the DeviceClass `gpu.amd.com` selects
  `device.driver == 'gpu.amd.com'`.
Made up, in the real formats: PCI addresses, card and render indexes, device IDs and the driver's
source hash. AMD's nodes get no taint of the driver's own (the NVIDIA one is our GPU pools').
"""

from __future__ import annotations

import hashlib
from typing import Any

DRIVER = "gpu.amd.com"
DEVICE_CLASS = {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": DRIVER},
                "spec": {"selectors": [{"cel": {"expression": f"device.driver == '{DRIVER}'"}}]}}


def gpu_device(node: str, index: int) -> dict[str, Any]:
    """One full MI300X (SPX, NPS1) as the driver publishes it (resource.k8s.io/v1 device)."""
    card, render, domain = 8 * index, 128 + 8 * index, index
    return {
        "name": f"gpu-{card}-{render}",
        "attributes": {
            "type": {"string": "amdgpu"},
            "pciAddr": {"string": f"{domain:04x}:00:02.0"},
            "cardIndex": {"int": card},
            "renderIndex": {"int": render},
            "deviceID": {"string": str(int(hashlib.sha256(f"{node}/{index}".encode()).hexdigest()[:15], 16))},
            "family": {"string": "AI"},
            "productName": {"string": "AMD_Instinct_MI300X_OAM"},
            "driverVersion": {"version": "6.12.12"},
            "driverSrcVersion": {"string": "7AA72EC2C8F5135190000" + f"{index:02d}"},
            "partitionProfile": {"string": "spx_nps1"},
            "resource.kubernetes.io/pcieRoot": {"string": f"pci{domain:04x}:00"},
        },
        "capacity": {"memory": {"value": "196592Mi"}, "computeUnits": {"value": "304"},
                     "simdUnits": {"value": "1216"}},
    }


def resource_slice(node: str, gpus: int) -> dict[str, Any]:
    """The node's slice: `gpus` full MI300X."""
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
            "metadata": {"name": f"{node}-{DRIVER}"},
            "spec": {"driver": DRIVER, "nodeName": node, "pool": {"name": node, "generation": 1,
                                                                  "resourceSliceCount": 1},
                     "devices": [gpu_device(node, index) for index in range(gpus)]}}


def node(name: str, pool: str) -> dict[str, Any]:
    """An MI300X node with our pool label."""
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, "modelplane.ai/pool": pool}}}
