"""Offline schema validation of rendered manifests.

Built-in kinds go through `kubernetes_validate.validate(manifest, "1.34", strict=True)` (the
Kubernetes 1.34 OpenAPI schemas, unknown fields rejected). Custom resources are checked with
`jsonschema` against the `openAPIV3Schema` of the published CRDs copied into tests/data/crds
(LeaderWorkerSet v0.9.0, Gateway API v1.5.1 standard, Inference Extension v1.0.1, Envoy Gateway
v1.9.0's Backend, MetalLB v0.14.9's IPAddressPool and L2Advertisement), made strict the same way:
an object schema that lists properties and does not preserve unknown fields rejects others. Every
kind compose emits has a schema: `problems` fails on a custom kind it has none for. Helm values
are checked against the chart's published values.schema.json in tests/data/charts
(`chart_value_problems`).
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema
import kubernetes_validate
import yaml

CRD_DIR = Path(__file__).resolve().parents[1] / "data" / "crds"
CHART_DIR = CRD_DIR.parent / "charts"
KUBERNETES_VERSION = "1.34"
BUILT_IN = ("apps/", "batch/", "rbac.authorization.k8s.io/", "resource.k8s.io/", "storage.k8s.io/",
            "networking.k8s.io/", "policy/", "autoscaling/", "discovery.k8s.io/")


@cache
def crd_validators() -> dict[tuple[str, str], jsonschema.Draft7Validator]:
    validators = {}
    for path in sorted(CRD_DIR.glob("*.yaml")):
        for document in yaml.load_all(path.read_text(), Loader=yaml.CSafeLoader):
            if not document or document.get("kind") != "CustomResourceDefinition":
                continue
            spec = document["spec"]
            for version in spec["versions"]:
                api_version = f"{spec['group']}/{version['name']}"
                schema = _strict(version["schema"]["openAPIV3Schema"])
                validators[(api_version, spec["names"]["kind"])] = jsonschema.Draft7Validator(schema)
    return validators


def _strict(schema: Any) -> Any:
    if isinstance(schema, dict):
        schema = {key: _strict(value) for key, value in schema.items()}
        if ("properties" in schema and "additionalProperties" not in schema
                and not schema.get("x-kubernetes-preserve-unknown-fields")):
            schema["additionalProperties"] = False
        return schema
    if isinstance(schema, list):
        return [_strict(item) for item in schema]
    return schema


def problems(manifest: dict) -> list[str]:
    """Why `manifest` does not validate (empty when it does)."""
    kind = (manifest["apiVersion"], manifest["kind"])
    validator = crd_validators().get(kind)
    if validator is not None:
        return [f"{'.'.join(map(str, error.absolute_path))}: {error.message}" for error in validator.iter_errors(manifest)]
    if "." in manifest["apiVersion"].partition("/")[0] and not manifest["apiVersion"].startswith(BUILT_IN):
        return [f"no CRD schema for {kind[0]} {kind[1]} in {CRD_DIR}"]
    try:
        kubernetes_validate.validate(manifest, KUBERNETES_VERSION, strict=True)
    except kubernetes_validate.ValidationError as error:
        return [f"{'.'.join(map(str, error.path))}: {error.message}"]
    return []


def chart_value_problems(chart: str, version: str, values: dict) -> list[str]:
    """Why `values` do not validate against the chart's published values.schema.json (empty when they
    do). The chart's own defaults are not merged in: the schemas used here require nothing at the top."""
    schema = json.loads((CHART_DIR / f"{chart}-{version}.values.schema.json").read_text())
    validator = jsonschema.validators.validator_for(schema)(schema)
    return [f"{'.'.join(map(str, error.absolute_path))}: {error.message}" for error in validator.iter_errors(values)]
