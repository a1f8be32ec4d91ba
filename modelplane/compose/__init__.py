"""compose: turn a placement into exactly what each workload cluster and the fleet gateway must run.

`render(manifests, placement, settings, gateway_addresses) -> Rendered`: plain, deterministic
Kubernetes manifest dicts per cluster, the fleet gateway's objects, each cluster's serving stack
(`Addon`s) and the ModelEndpoint of every placed replica, plus warnings. Pure Python: no Pulumi,
no I/O, no environment (DESIGN.md section 2). `Rendered.files()` lays the result out as YAML for
`modelplane plan --render DIR`.
"""

from modelplane.compose.cache import secret_placeholder
from modelplane.compose.render import Rendered, render
from modelplane.compose.routing import address_placeholder
from modelplane.compose.settings import Settings
from modelplane.compose.stack import Addon, Install

__all__ = ["Addon", "Install", "Rendered", "Settings", "address_placeholder", "render", "secret_placeholder"]
