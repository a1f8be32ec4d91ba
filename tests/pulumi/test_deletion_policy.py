"""`InferenceCluster.spec.deletionPolicy` (issue 22): Delete, the default, changes nothing; Orphan marks every
resource of the cluster retainOnDelete and switches on GKE's and EKS's own deletion protection."""

from __future__ import annotations

from typing import Any

import pulumi
import pytest
from pulumi.runtime import settings

from modelplane.api import ManifestErrors, dump_objects, load, load_objects
from tests.pulumi.harness import ROOT, Engine, unwrap
from tests.pulumi.test_names import AliasMonitor


class RetainMonitor(AliasMonitor):
    """Also records each custom resource's retainOnDelete, by URN."""

    def __init__(self, mocks: pulumi.runtime.Mocks):
        super().__init__(mocks)
        self.retained: dict[str, bool] = {}

    def RegisterResource(self, request: Any) -> Any:  # noqa: N802 (the gRPC method's name)
        response = super().RegisterResource(request)
        if request.custom:
            self.retained[response.urn] = request.retainOnDelete
        return response


def objects(policies: dict[str, str]) -> list[dict[str, Any]]:
    found = dump_objects(load([ROOT / "examples" / "multi-cloud"]))
    for obj in found:
        if obj["kind"] == "InferenceCluster" and obj["metadata"]["name"] in policies:
            obj["spec"]["deletionPolicy"] = policies[obj["metadata"]["name"]]
    return found


def registered(policies: dict[str, str]) -> tuple[Engine, RetainMonitor]:
    engine = Engine()
    monitor = RetainMonitor(engine)
    settings.set_root_resource(None)
    pulumi.runtime.set_mocks(engine, project="platform", stack="test", preview=False, monitor=monitor)

    @pulumi.runtime.test
    def program() -> pulumi.Output[Any]:
        from modelplane.pulumi import Modelplane

        fleet = Modelplane("ml", {"manifests": load_objects(objects(policies), source="objects"),
                                  "gcp_project": "acme-ml",
                                  "kubeconfigs": {"onprem-us-east": pulumi.Output.secret("kubeconfig: onprem")}})
        return fleet.placement_summary

    program()
    return engine, monitor


def under(monitor: RetainMonitor, prefix: str) -> dict[str, bool]:
    """retainOnDelete of every custom resource whose name starts with `prefix` (a cluster's subtree)."""
    return {urn: monitor.retained[urn] for urn, _, name, _ in monitor.registered
            if name.startswith(prefix) and urn in monitor.retained}


def test_orphan_retains_every_resource_of_the_cluster_and_switches_on_the_clouds_protection() -> None:
    engine, monitor = registered({"gke-us-central": "Orphan", "eks-us-west": "Orphan"})
    for cluster in ("gke-us-central", "eks-us-west"):
        retained = under(monitor, f"ml:{cluster}-")
        assert len(retained) > 5 and all(retained.values()), cluster
    assert unwrap(engine.named("ml:gke-us-central-gke-cluster").inputs)["deletionProtection"] is True
    assert unwrap(engine.named("ml:eks-us-west-eks-cluster").inputs)["deletionProtection"] is True
    onprem = under(monitor, "ml:onprem-us-east-")
    assert onprem and not any(onprem.values()), "an Existing cluster without the policy keeps the default"


def test_delete_is_the_default_and_changes_nothing() -> None:
    engine, monitor = registered({})
    assert not any(monitor.retained.values())
    assert unwrap(engine.named("ml:gke-us-central-gke-cluster").inputs)["deletionProtection"] is False
    assert "deletionProtection" not in unwrap(engine.named("ml:eks-us-west-eks-cluster").inputs)


def test_another_policy_is_refused_with_the_allowed_ones() -> None:
    with pytest.raises(ManifestErrors) as refused:
        load_objects(objects({"gke-us-central": "Retain"}), source="objects")
    assert "spec.deletionPolicy" in str(refused.value) and "'Delete' or 'Orphan'" in str(refused.value)
