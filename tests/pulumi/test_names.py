"""Names never collide, and an upgrade replaces nothing (issue 22).

- Two `Modelplane` components of the same fleet in one program register no URN twice.
- Every URN that modelplane at b30faba (before this encoding) registered for the dev stack and for the
  more-clouds fleet (`tests/data/names/b30faba-urns.json`, written by `generate.py` beside it) is
  reached by exactly one of today's resources, through its own name, its aliases or its parent's, as
  the Pulumi engine resolves them (`generateAliases`/`inheritedChildAlias` in pkg/resource/deploy:
  an alias without a parent keeps the resource's parent; a child of an aliased parent is also looked
  up under the parent's old URN, with the parent's old name in place of its new one when the child's
  name starts with it), and no resource is left without one: the upgrade is all updates in place,
  no create, no delete, no replace, but for the engine Services beside LeaderWorkerSets, renamed by
  design (`beside_leaderworkersets`). (The real engine's run is tests/e2e/test_upgrade.py.)
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pulumi
import pytest
from pulumi.runtime import settings
from pulumi.runtime.mocks import MockMonitor

from modelplane.api import dump_objects, load, load_objects
from tests.pulumi import harness, test_clouds
from tests.pulumi.harness import ROOT, Engine, run_program

OLD = json.loads((ROOT / "tests" / "data" / "names" / "b30faba-urns.json").read_text())


class AliasMonitor(MockMonitor):
    """Records each registration's URN, parent URN, name and alias names."""

    registered: list[tuple[str, str, str, list[str]]]

    def __init__(self, mocks: pulumi.runtime.Mocks):
        super().__init__(mocks)
        self.registered = []
        self.deleted_with: dict[str, str] = {}

    def RegisterResource(self, request: Any) -> Any:  # noqa: N802 (the gRPC method's name)
        self.deleted_with[request.name] = request.deletedWith
        response = super().RegisterResource(request)
        names = [spec.spec.name for spec in request.aliases if spec.spec.name]
        self.registered.append((response.urn, request.parent, request.name, names))
        return response


def renamed(urn: str, name: str) -> str:
    return f"{urn.rsplit('::', 1)[0]}::{name}"


def resolve(registered: list[tuple[str, str, str, list[str]]], old: set[str]) -> dict[str, str]:
    """Today's URN -> the old URN it takes over (itself when unchanged); a resource with none is absent."""
    taken: dict[str, str] = {}
    names = {urn: name for urn, _, name, _ in registered}
    for urn, parent, name, aliases in registered:  # parents register before their children
        found = {urn, *(renamed(urn, alias) for alias in aliases)}
        if parent in taken and taken[parent] != parent:
            parent_new, parent_old = names[parent], taken[parent].rsplit("::", 1)[-1]
            for candidate in (name, *aliases):
                inherited = parent_old + candidate[len(parent_new):] if candidate.startswith(parent_new) else candidate
                found.add(renamed(urn, inherited))
        matches = found & old
        assert len(matches) <= 1, (urn, matches)
        if matches:
            taken[urn] = matches.pop()
    return taken


ADDED_SINCE = ("networking.k8s.io/v1:NetworkPolicy", "cert-manager.io/v1:Certificate", "gateway.envoyproxy.io/v1alpha1:",
               "gateway.networking.k8s.io/v1:BackendTLSPolicy", "core/v1:ConfigMap::")
"""Kinds of resources that are new since b30faba by design, not renamed (issue 23: a NetworkPolicy per model
namespace; examples/multi-cloud, the dev stack, now shows the secured gateway: Certificates, Envoy Gateway
policies and proxy settings, BackendTLSPolicies and the CA's ConfigMaps)."""


def beside_leaderworkersets(old: list[str]) -> set[str]:
    """The old Services named as a LeaderWorkerSet of theirs (old names `<cluster>-service-<ns>-<name>`
    and `<cluster>-leaderworkerset-<ns>-<name>`). Renamed since by design: the LeaderWorkerSet controller
    owns a headless Service of its own name (`ReplicaContext.service_name`), so the engine's Service is
    now `<name>-http`: created, and the old one deleted once the route points at the new one."""
    gangs = {urn.rsplit("::", 1)[-1].replace("-leaderworkerset-", "-service-", 1) for urn in old
             if "$kubernetes:leaderworkerset.x-k8s.io/v1:LeaderWorkerSet::" in urn}
    return {urn for urn in old if "$kubernetes:core/v1:Service::" in urn and urn.rsplit("::", 1)[-1] in gangs}


def assert_every_old_urn_is_taken_over_once(registered: list[tuple[str, str, str, list[str]]], old: list[str]) -> None:
    renamed = beside_leaderworkersets(old)
    old = [urn for urn in old if urn not in renamed]
    taken = resolve(registered, set(old))
    stack = [urn for urn, _, _, _ in registered if urn.endswith("::pulumi:pulumi:Stack::" + urn.rsplit("::", 1)[-1])]
    created = [urn for urn, _, _, _ in registered if urn not in taken and urn not in stack
               and not any(f"$kubernetes:{kind}" in urn for kind in ADDED_SINCE)]
    services = sorted(urn for urn in created if "$kubernetes:core/v1:Service::" in urn and urn.endswith("-http"))
    assert len(services) == len(renamed), "each Service beside a LeaderWorkerSet is created under its new name"
    assert [urn for urn in created if urn not in services] == [], "these would be created (and their old selves deleted)"
    assert sorted(taken.values()) == sorted(set(old) - set(stack)), "every old resource is kept, each by one"
    assert any(new != was for new, was in taken.items()), "the names did change"


def test_the_dev_stack_of_b30faba_upgrades_in_place(monkeypatch: pytest.MonkeyPatch) -> None:
    monitors: list[AliasMonitor] = []
    monkeypatch.setattr(harness, "MockMonitor", lambda mocks: monitors.append(AliasMonitor(mocks)) or monitors[-1])
    run_program(Engine())
    assert_every_old_urn_is_taken_over_once(monitors[0].registered, OLD["dev"])


def test_the_more_clouds_fleet_of_b30faba_upgrades_in_place(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(test_clouds, "RecordingMonitor", AliasMonitor)
    _, monitor = test_clouds.build_fleet(test_clouds.CloudEngine())
    assert_every_old_urn_is_taken_over_once(monitor.registered, OLD["more-clouds"])


def test_two_fleets_in_one_program_register_no_urn_twice() -> None:
    engine = Engine()
    monitor = AliasMonitor(engine)
    settings.set_root_resource(None)
    pulumi.runtime.set_mocks(engine, project="platform", stack="test", preview=False, monitor=monitor)

    @pulumi.runtime.test
    def program() -> pulumi.Output[Any]:
        from modelplane.pulumi import Modelplane

        manifests = load([ROOT / "examples" / "multi-cloud"])
        fleets = [Modelplane(name, {"manifests": manifests, "gcp_project": "acme-ml",
                                    "kubeconfigs": {"onprem-us-east": pulumi.Output.secret("kubeconfig: onprem")}})
                  for name in ("staging", "prod")]
        return pulumi.Output.all(*(fleet.placement_summary for fleet in fleets))

    program()
    urns = [urn for urn, _, _, _ in monitor.registered]
    assert len(urns) > 200 and len(set(urns)) == len(urns)
    for fleet in ("staging", "prod"):
        mine = [urn for urn, _, name, _ in monitor.registered if name.startswith(f"{fleet}:")]
        assert any(urn.endswith(f"::{fleet}:gke-us-central:Deployment:ml-team/qwen3-8b-gke-us-central-0-qwen3-8b")
                   for urn in mine)


def test_pool_names_collide_neither_with_the_system_pool_nor_across_clusters() -> None:
    """Joined by `-`, a GKE pool named `system` took the system pool's name, and cluster `a`'s pool `gke-b`
    that of cluster `a-gke`'s pool `b`; pools are `component:pool` now."""
    objects = dump_objects(load([ROOT / "examples" / "multi-cloud"]))
    gke = next(o for o in objects if o["kind"] == "InferenceCluster" and o["metadata"]["name"] == "gke-us-central")
    gke["spec"]["nodePools"][0]["name"] = "system"
    twin = copy.deepcopy(gke)
    twin["metadata"]["name"] = "gke-us-central-gke"
    twin["spec"]["nodePools"][0]["name"] = "x"
    gke["spec"]["nodePools"].append({**copy.deepcopy(gke["spec"]["nodePools"][0]), "name": "gke-x"})
    engine = Engine()
    monitor = AliasMonitor(engine)
    settings.set_root_resource(None)
    pulumi.runtime.set_mocks(engine, project="platform", stack="test", preview=False, monitor=monitor)

    @pulumi.runtime.test
    def program() -> pulumi.Output[Any]:
        from modelplane.pulumi import Modelplane

        return Modelplane("ml", {"manifests": load_objects([*objects, twin], source="objects"), "gcp_project": "acme-ml",
                                 "kubeconfigs": {"onprem-us-east": pulumi.Output.secret("kubeconfig: onprem")}}
                          ).placement_summary

    program()
    urns = [urn for urn, _, _, _ in monitor.registered]
    assert len(set(urns)) == len(urns)
    pools = sorted(name for urn, _, name, _ in monitor.registered if "gcp:container/nodePool:NodePool" in urn)
    assert pools == ["ml:gke-us-central-gke-gke-system", "ml:gke-us-central-gke-gke:x",
                     "ml:gke-us-central-gke-system", "ml:gke-us-central-gke:gke-x", "ml:gke-us-central-gke:system"]
