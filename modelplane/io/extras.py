"""Which optional install ("extra") provides each package a command or a cluster needs.

`pip install modelplane` is the CLI alone (validate, plan, explain, capacity, crds, control-plane);
the Pulumi program, each cloud and `reconcile` need packages an extra installs. `missing(error)`
turns the ModuleNotFoundError of one of those into the sentence a user acts on; any other missing
module is not ours to explain and gets None. Pure: no imports beyond the standard library.
"""

from __future__ import annotations

EXTRAS: dict[str, str] = {
    "kubernetes": "control",
    "urllib3": "control",
    "pulumi": "pulumi",
    "pulumi_kubernetes": "pulumi",
    "pulumi_gcp": "gcp",
    "pulumi_aws": "aws",
    "pulumi_azure_native": "azure",
    "pulumi_nebius": "nebius",
    "ediri_vultr": "vultr",
}
"""Top-level module -> the extra of pyproject.toml that installs it."""


def missing(error: ModuleNotFoundError, needed_by: str) -> str | None:
    """What to install when `needed_by` failed to import `error.name`, or None if no extra provides it."""
    module = (error.name or "").partition(".")[0]
    extra = EXTRAS.get(module)
    if extra is None:
        return None
    return (f"{needed_by} needs the Python package {module!r}, which modelplane's {extra!r} extra installs: "
            f"pip install 'modelplane[{extra}]'")
