"""The Pulumi program for a stack's role (`modelplane:role`, `roles.stack_role`): one stack for the
whole fleet (the default), the split layout's fleet stack, or one workload stack. `__main__.py` runs
`program`; it sits apart from `roles` because it builds `Modelplane` (`fleet`), which uses `roles`.
"""

from __future__ import annotations

from pathlib import Path

import pulumi

from modelplane.pulumi.config import read_stack_config
from modelplane.pulumi.fleet import Modelplane
from modelplane.pulumi.roles import COMPONENT, NAMESPACE, SECRETS, SHARE, cluster_reports, stack_role, workload_stack


def program(project_dir: Path) -> None:
    """The whole Pulumi program for the stack's role (what `__main__.py` runs)."""
    config = pulumi.Config(NAMESPACE)
    role = stack_role(config)
    if role == "cluster":
        done = workload_stack(config.require("cluster"), config.require("fleetStack"))
        pulumi.export("applied", done.apply(lambda d: d["applied"]))
        pulumi.export("gatewayAddress", done.apply(lambda d: d["gatewayAddress"]))
        return
    args = read_stack_config(project_dir)
    if role == "fleet":
        args["split"] = cluster_reports(config, [cluster.name for cluster in args["manifests"].fleet.clusters])
    fleet = Modelplane(COMPONENT, args)
    pulumi.export("placement", fleet.placement_summary)
    pulumi.export("serviceUrls", fleet.service_urls)
    pulumi.export("gatewayAddress", fleet.gateway_address)
    pulumi.export("gatewayAddresses", fleet.gateway_addresses)
    pulumi.export("fleetCostPerHour", fleet.fleet_cost_per_hour)
    pulumi.export("deploymentCostPerHour", fleet.deployment_cost_per_hour)
    if args.get("control_cluster") is not None:
        from modelplane.pulumi.control_cluster import export_record  # the kubernetes client, only when used

        export_record(args["control_cluster"])
    for cluster, share in sorted((fleet.workload_stacks or {}).items()):
        pulumi.export(SHARE + cluster, share)
    for cluster, private in sorted((fleet.workload_secrets or {}).items()):
        pulumi.export(SECRETS + cluster, private)

