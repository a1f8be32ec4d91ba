"""A platform team's own program: one `Modelplane` fleet per environment, plus a resource of its own.

Staging is an existing cluster in the team's lab (its kubeconfig is secret config); production is a
GKE cluster the program creates. Both serve the same model (fleets/model.yaml). The team adds its
own on-call ConfigMap to the production cluster through the provider modelplane built for it.
`pulumi preview` / `pulumi up` run it like any program; test_own_program.py tests it with
`modelplane.testing` (docs/pulumi.md, "Using the components in your own program").
"""

from pathlib import Path

import pulumi
import pulumi_kubernetes as k8s

from modelplane.api import load
from modelplane.pulumi import Modelplane

HERE = Path(__file__).resolve().parent
config = pulumi.Config()

staging = Modelplane("staging", {
    "manifests": load([HERE / "fleets" / "staging", HERE / "fleets" / "model.yaml"]),
    "kubeconfigs": {"staging-lab": config.require_secret("labKubeconfig")}})
production = Modelplane("production", {
    "manifests": load([HERE / "fleets" / "production", HERE / "fleets" / "model.yaml"]),
    "gcp_project": config.require("gcpProject")})

oncall = k8s.core.v1.ConfigMap(
    "oncall", metadata={"name": "oncall", "namespace": "ml-team"}, data={"team": "platform", "pager": "ml-platform"},
    opts=pulumi.ResourceOptions(provider=production.clusters["prod-us-central"].provider,
                                depends_on=[production]))

pulumi.export("stagingPlacement", staging.placement_summary)
pulumi.export("productionPlacement", production.placement_summary)
pulumi.export("productionKubeconfig", production.clusters["prod-us-central"].kubeconfig)  # secret
