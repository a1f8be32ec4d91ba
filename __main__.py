"""The modelplane Pulumi program: read the stack's config and hand off to the library.

`pulumi preview` shows every cluster, serving stack, placed replica and route; `pulumi up`
converges them. See docs/pulumi.md for the stack config keys and how to run it.

This is the program's entry point, so it alone sets process state: the cyclic garbage collector stays
off for the whole run, as in `modelplane.cli.run` (the manifests, the placement and the resources
live until the program ends; the collector would only rescan them). The component library leaves
the collector as it finds it.
"""

import gc
from pathlib import Path

import pulumi

from modelplane.pulumi import Modelplane, read_stack_config

gc.disable()
fleet = Modelplane("modelplane", read_stack_config(Path(__file__).resolve().parent))

pulumi.export("placement", fleet.placement_summary)
pulumi.export("serviceUrls", fleet.service_urls)
pulumi.export("gatewayAddress", fleet.gateway_address)
pulumi.export("gatewayAddresses", fleet.gateway_addresses)
pulumi.export("fleetCostPerHour", fleet.fleet_cost_per_hour)
pulumi.export("deploymentCostPerHour", fleet.deployment_cost_per_hour)
