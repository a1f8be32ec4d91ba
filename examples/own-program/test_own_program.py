"""The team's own test of its program: plain `pulumi.runtime.set_mocks` with modelplane's mocks.

Nothing here reaches a cloud or a cluster: `ModelplaneMocks` runs modelplane's placement as the
engine would and answers what GKE computes (the production cluster's endpoint and CA), so every
kubeconfig and placement resolves. Run it with `python -m pytest examples/own-program`.
"""

from __future__ import annotations

import runpy
from pathlib import Path
from typing import Any

import pulumi
import pytest

from modelplane.testing import ModelplaneMocks

HERE = Path(__file__).resolve().parent
LAB_KUBECONFIG = "apiVersion: v1\nkind: Config\n# the lab cluster, reached with a token\n"


class Recording(ModelplaneMocks):
    """The shipped mocks, keeping what the program registered (name -> type, inputs, provider reference)."""

    def __init__(self) -> None:
        super().__init__()
        self.registered: dict[str, tuple[str, dict[str, Any], str]] = {}

    def new_resource(self, args: pulumi.runtime.MockResourceArgs) -> tuple[str, dict[str, Any]]:
        self.registered[args.name] = (args.typ, args.inputs, args.provider or "")
        return super().new_resource(args)


@pytest.fixture
def mocks() -> Recording:
    recording = Recording()
    pulumi.runtime.set_mocks(recording, project="own-program", stack="test", preview=False)
    pulumi.runtime.set_all_config({"own-program:labKubeconfig": LAB_KUBECONFIG, "own-program:gcpProject": "acme-ml"},
                                  ["own-program:labKubeconfig"])
    return recording


@pytest.fixture
def program(mocks: Recording) -> dict[str, Any]:
    return runpy.run_path(str(HERE / "__main__.py"))


@pulumi.runtime.test
def test_each_environment_places_the_model_on_its_own_cluster(program: dict[str, Any]) -> pulumi.Output[None]:
    def check(placements: list[dict[str, Any]]) -> None:
        staging, production = placements
        assert staging["ml-team/chat"]["replicas"] == ["staging-lab#0 (chat: l4)"]
        assert production["ml-team/chat"]["replicas"] == ["prod-us-central#0 (chat: l4)"]

    return pulumi.Output.all(program["staging"].placement_summary,
                             program["production"].placement_summary).apply(check)


@pulumi.runtime.test
def test_the_production_kubeconfig_is_the_gke_clusters_and_stays_secret(program: dict[str, Any]
                                                                         ) -> pulumi.Output[None]:
    kubeconfig = program["production"].clusters["prod-us-central"].kubeconfig

    def check(args: list[Any]) -> None:
        text, secret = args
        assert "https://34.118.0.10" in text  # the endpoint ModelplaneMocks gives a GKE cluster
        assert secret

    return pulumi.Output.all(kubeconfig, pulumi.Output.from_input(kubeconfig).is_secret()).apply(check)


@pulumi.runtime.test
def test_the_teams_configmap_goes_to_the_production_cluster(program: dict[str, Any],
                                                           mocks: Recording) -> pulumi.Output[None]:
    def check(_: Any) -> None:
        typ, inputs, provider = mocks.registered["oncall"]
        assert typ == "kubernetes:core/v1:ConfigMap"
        assert inputs["data"] == {"team": "platform", "pager": "ml-platform"}
        assert provider.split("::")[3] == "production:prod-us-central-gke-k8s", provider  # the GKE cluster's provider

    return program["oncall"].id.apply(check)
