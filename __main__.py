"""The modelplane Pulumi program: read the stack's config and hand off to the library.

`pulumi preview` shows every cluster, serving stack, placed replica and route; `pulumi up`
converges them. See docs/pulumi.md for the stack config keys and how to run it.
"""

from pathlib import Path

import pulumi

from modelplane.pulumi import Modelplane, read_stack_config

fleet = Modelplane("modelplane", read_stack_config(Path(__file__).resolve().parent))

pulumi.export("placement", fleet.placement_summary)
pulumi.export("serviceUrls", fleet.service_urls)
pulumi.export("gatewayAddress", fleet.gateway_address)
pulumi.export("gatewayAddresses", fleet.gateway_addresses)
pulumi.export("fleetCostPerHour", fleet.fleet_cost_per_hour)
pulumi.export("deploymentCostPerHour", fleet.deployment_cost_per_hour)
