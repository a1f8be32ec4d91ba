"""The `ControlPlane` component as a platform team imports it: the modelplane CRDs, the Pulumi Kubernetes
Operator's pinned chart, the workspace's access and the Stack, all on the control cluster's provider,
each exactly as `compose.control_plane` renders it (so what `control-plane --render` writes is what
the component applies)."""

from __future__ import annotations

from typing import Any

import pulumi_kubernetes as k8s
import pytest

from modelplane.api.crds import custom_resource_definitions
from modelplane.compose.control_plane import ControlPlaneSettings, access, stack
from modelplane.pulumi import ControlPlane
from tests.pulumi.harness import Engine, unwrap
from tests.pulumi.test_components import run

SETTINGS = ControlPlaneSettings(stack="acme/modelplane/prod", image="registry.example/modelplane-workspace:0.1.0",
                                backend="s3://acme-pulumi-state", env_keys=("PULUMI_CONFIG_PASSPHRASE",))


def control_plane(install_operator: bool) -> Engine:
    engine = Engine()

    def program() -> dict[str, Any]:
        provider = k8s.Provider("control", kubeconfig="apiVersion: v1\nkind: Config\n")
        built = ControlPlane("control", {"settings": SETTINGS, "provider": provider,
                                         "install_operator": install_operator})
        return {"stack": built.stack_name}

    assert run(program, engine) == {"stack": "modelplane-prod"}
    return engine


@pytest.fixture(scope="module")
def engine() -> Engine:
    return control_plane(install_operator=True)


def test_the_crds_are_the_generated_ones(engine: Engine) -> None:
    registered = engine.of_type("kubernetes:apiextensions.k8s.io/v1:CustomResourceDefinition")
    assert {r.inputs["metadata"]["name"]: unwrap(r.inputs["spec"]) for r in registered} == {
        crd["metadata"]["name"]: crd["spec"] for crd in custom_resource_definitions()}


def test_the_operator_comes_from_its_pinned_chart(engine: Engine) -> None:
    [release] = engine.of_type("kubernetes:helm.sh/v3:Release")
    assert (release.inputs["chart"], release.inputs["version"], release.inputs["namespace"]) == (
        "oci://ghcr.io/pulumi/helm-charts/pulumi-kubernetes-operator", "2.9.0", "pulumi-kubernetes-operator")


def test_access_and_the_stack_are_what_render_writes(engine: Engine) -> None:
    by_name = {(r.typ.rsplit(":", 1)[-1], r.inputs["metadata"]["name"]): r for r in engine.registered
               if r.custom and "metadata" in r.inputs}
    for manifest in [*access(SETTINGS), stack(SETTINGS)]:
        registered = unwrap(by_name[(manifest["kind"], manifest["metadata"]["name"])].inputs)
        assert {key: registered[key] for key in manifest} == manifest, manifest["kind"]


def test_everything_goes_to_the_control_clusters_provider(engine: Engine) -> None:
    assert {r.provider_name for r in engine.registered if r.custom and not r.typ.startswith("pulumi:providers")} == {
        "control"}


def test_an_installed_operator_is_left_alone() -> None:
    engine = control_plane(install_operator=False)
    assert not engine.of_type("kubernetes:helm.sh/v3:Release")
    assert engine.of_type("kubernetes:pulumi.com/v1:Stack")
