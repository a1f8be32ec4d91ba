"""compose: turn a placement into exactly what each workload cluster and the fleet gateway must run.

`render(manifests, placement, settings, gateway_addresses) -> Rendered`: plain, deterministic
Kubernetes manifest dicts per cluster, the fleet gateway's objects, each cluster's serving stack
(`Addon`s) and the ModelEndpoint of every placed replica, plus warnings. Pure Python: no Pulumi,
no I/O, no environment (DESIGN.md section 2). `Rendered.files()` lays the result out as YAML for
`modelplane plan --render DIR`.

Invariant: inside a list or struct the API server treats as one value (an atomic list or struct:
HTTPRoute `rules`, a claim's `devices.requests`, an env `fieldRef`, a SecurityPolicy's
`credentialRefs`), every field the API server would default is written out with that default
(`weight: 1`, `allocationMode: ExactCount`, `apiVersion: v1`, `group: ""`). The kubernetes provider
applies each object server-side under a field manager of its own per create, so when a run is
killed after its create reached the API server, the next run's create applies the same object
under a second manager; an atomic value that differs from the stored one only by a default is
then a conflict, and that run stops. Checked on every example by
tests/e2e/test_server_side_validation.py (a second manager's apply of every rendered object).
"""

from modelplane.compose.cache import secret_placeholder, storage_class
from modelplane.compose.gateways import bind_addresses, cluster_stack
from modelplane.compose.stack import class_drivers
from modelplane.compose.names import POOL as POOL_LABEL
from modelplane.compose.renderer import Rendered, plan_warnings, render
from modelplane.compose.routing import address_placeholder
from modelplane.compose.serving import replica_path
from modelplane.compose.settings import Settings
from modelplane.compose.stack import (
    FLEET_GATEWAY,
    GPU_TOLERATION,
    INFERENCE_GATEWAY,
    Addon,
    Install,
    serving_stack,
)

# What the Pulumi layer needs besides `render` itself: pieces registered before the placement is
# known (serving stacks with the fleet gateway's add-ons), the fleet gateway's objects bound to the
# clusters' addresses once those are known, and the node label and GPU taint that the pods compose
# renders must match on the nodes it provisions.
__all__ = [
    "FLEET_GATEWAY", "GPU_TOLERATION", "INFERENCE_GATEWAY", "POOL_LABEL", "Addon", "Install", "Rendered", "Settings", "address_placeholder",
    "bind_addresses", "class_drivers", "cluster_stack", "plan_warnings", "render", "replica_path",
    "secret_placeholder", "serving_stack", "storage_class",
]
