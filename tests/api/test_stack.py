"""`InferenceCluster.spec.stack`: Standard (default) or Dynamo, immutable through a CRD transition rule.

The loader cannot know an object's previous value, so immutability is the API server's: the rule is
checked here to be on `spec` with its field path (no end-to-end test has a real API server refuse
the change yet).
"""

from __future__ import annotations

import pytest

from modelplane.api import ManifestErrors, ServingStack, load_sources
from modelplane.api.crds import custom_resource_definitions

CLASS = """apiVersion: modelplane.ai/v1alpha1
kind: InferenceClass
metadata: {name: h100}
spec:
  devices: [{name: gpu, driver: gpu.nvidia.com, deviceClassName: gpu.nvidia.com}]
"""
CLUSTER = """apiVersion: modelplane.ai/v1alpha1
kind: InferenceCluster
metadata: {name: gpu}
spec:
  gateway: {auth: {apiKeysSecret: inference-api-keys}}
  cluster: {source: Existing, existing: {kubeconfig: gpuKubeconfig}}
  nodePools: [{name: h100, className: h100}]
"""


def test_the_stack_defaults_to_standard_and_takes_dynamo() -> None:
    [default] = load_sources([("k.yaml", CLASS), ("c.yaml", CLUSTER)]).fleet.clusters
    [chosen] = load_sources([("k.yaml", CLASS), ("c.yaml", CLUSTER + "  stack: Dynamo\n")]).fleet.clusters
    assert (default.spec.stack, chosen.spec.stack) == (ServingStack.STANDARD, ServingStack.DYNAMO)


def test_an_unknown_stack_names_the_allowed_ones() -> None:
    with pytest.raises(ManifestErrors) as errors:
        load_sources([("k.yaml", CLASS), ("c.yaml", CLUSTER + "  stack: LWS\n")])
    assert str(errors.value) == ("c.yaml:8: InferenceCluster gpu: spec.stack: must be one of 'Standard' or 'Dynamo'; "
                                 "got 'LWS'")


def test_the_crd_makes_the_stack_immutable_with_a_transition_rule() -> None:
    crd = next(c for c in custom_resource_definitions() if c["spec"]["names"]["kind"] == "InferenceCluster")
    spec = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    assert spec["properties"]["stack"]["enum"] == ["Standard", "Dynamo"]
    assert spec["properties"]["stack"]["default"] == "Standard"
    [rule] = [r for r in spec["x-kubernetes-validations"] if "oldSelf" in r["rule"]]
    assert rule["rule"] == "!has(oldSelf.stack) || self.stack == oldSelf.stack"
    assert rule["fieldPath"] == ".stack" and rule["message"].startswith("stack is immutable once set")
