"""ResourceSlices as the NVIDIA DRA driver publishes them: fixtures for the unit and e2e tests.

Provenance (ours; no driver output is copied):
- Attribute names and kinds of a full GPU: kubernetes-sigs/dra-driver-nvidia-gpu v0.4.x,
  cmd/gpu-kubelet-plugin/deviceinfo.go `GpuInfo.Attributes` and nvlib.go `getGpuInfo`: strings
  `type` ("gpu"), `uuid`, `productName` (NVML's device name), `brand` (go-nvlib
  `GetBrandAsString`), `architecture` (go-nvlib `GetArchitectureAsString`); versions
  `cudaComputeCapability`, `driverVersion` and `cudaDriverVersion` (each through Masterminds
  semver, so 9.0 is 9.0.0 and 580.159.04 is 580.159.4); `resource.kubernetes.io/pciBusID` and
  `resource.kubernetes.io/pcieRoot` (k8s.io/dynamic-resource-allocation/deviceattribute). One
  capacity, `memory`: NVML's total in bytes as a BinarySI quantity (partitions.go
  `fullGpuCapacity`), which the API serves in its canonical form (85520809984 bytes is 81559Mi).
  `index`, `minor` and bare `pcieBusID` were removed after v25.8, so none is published here.
  Devices are named `gpu-<minor>`; one slice per node, pool named after the node.
- The H100's values were measured on an NVIDIA H100 80GB HBM3 through NVML, driver 580.159.04
  (issue 25): productName, architecture Hopper, compute capability 9.0, CUDA driver 13.0, memory
  85520809984 bytes. The other cards' memory is what NVML reports for them (issue 25); their
  product names are NVML's names for those boards; every card is given the same driver.
- Not measured: the brand string ("Nvidia", go-nvlib's name for NVML_BRAND_NVIDIA), UUIDs and PCI
  addresses (made up, in the real formats).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

DRIVER = "gpu.nvidia.com"
DRIVER_VERSION = "580.159.4"
CUDA_DRIVER_VERSION = "13.0.0"
BRAND = "Nvidia"


@dataclass(frozen=True)
class Card:
    product: str
    architecture: str
    capability: str
    memory: str
    """NVML's total memory as the API serves it."""


H100 = Card("NVIDIA H100 80GB HBM3", "Hopper", "9.0.0", "81559Mi")
H200 = Card("NVIDIA H200", "Hopper", "9.0.0", "143771Mi")
L40S = Card("NVIDIA L40S", "Ada Lovelace", "8.9.0", "46068Mi")
L4 = Card("NVIDIA L4", "Ada Lovelace", "8.9.0", "23034Mi")
A100_80 = Card("NVIDIA A100-SXM4-80GB", "Ampere", "8.0.0", "81920Mi")
A100_40 = Card("NVIDIA A100-SXM4-40GB", "Ampere", "8.0.0", "40960Mi")
CARDS = (H100, H200, L40S, L4, A100_80, A100_40)
MEBIBYTES = {card: int(card.memory.removesuffix("Mi")) for card in CARDS}


def gpu_device(card: Card, node: str, minor: int) -> dict[str, Any]:
    """One full GPU as the driver publishes it (resource.k8s.io/v1 device)."""
    bus = 0x18 + 0x10 * minor
    return {
        "name": f"gpu-{minor}",
        "attributes": {
            "type": {"string": "gpu"},
            "uuid": {"string": f"GPU-{uuid.uuid5(uuid.NAMESPACE_DNS, f'{node}/{minor}')}"},
            "productName": {"string": card.product},
            "brand": {"string": BRAND},
            "architecture": {"string": card.architecture},
            "cudaComputeCapability": {"version": card.capability},
            "driverVersion": {"version": DRIVER_VERSION},
            "cudaDriverVersion": {"version": CUDA_DRIVER_VERSION},
            "resource.kubernetes.io/pciBusID": {"string": f"0000:{bus:02x}:00.0"},
            "resource.kubernetes.io/pcieRoot": {"string": f"pci0000:{bus & 0xf0:02x}"},
        },
        "capacity": {"memory": {"value": card.memory}},
    }


def resource_slice(node: str, card: Card, gpus: int) -> dict[str, Any]:
    """The node's slice: `gpus` full GPUs of `card`."""
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
            "metadata": {"name": f"{node}-{DRIVER}"},
            "spec": {"driver": DRIVER, "nodeName": node, "pool": {"name": node, "generation": 1,
                                                                  "resourceSliceCount": 1},
                     "devices": [gpu_device(card, node, minor) for minor in range(gpus)]}}


def node(name: str, pool: str) -> dict[str, Any]:
    """A GPU node with the labels and taint our cluster components give one (contract.py)."""
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, "modelplane.ai/pool": pool,
                                                  "nvidia.com/gpu.present": "true"}},
            "spec": {"taints": [{"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"}]}}


DEVICE_CLASS = {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": DRIVER},
                "spec": {"selectors": [{"cel": {"expression": f"device.driver == '{DRIVER}' && "
                                                              f"device.attributes['{DRIVER}'].type == 'gpu'"}}]}}
"""The DeviceClass the driver's chart installs for full GPUs."""


def card_for(architecture: str | None, product: str | None, memory_mebibytes: float) -> Card:
    """The card a class describes: by product name, else the card of its architecture whose
    memory is closest to what the class declares."""
    if product is not None:
        return next(card for card in CARDS if card.product == product)
    fitting = [card for card in CARDS if architecture in (None, card.architecture)]
    return min(fitting, key=lambda card: (abs(MEBIBYTES[card] - memory_mebibytes), card.product))
