"""Modelplane: a control plane for AI inference across a fleet of GPU Kubernetes clusters.

The package is layered (see DESIGN.md): ``api`` loads and validates manifests, ``cel`` evaluates
DRA device selectors, ``scheduling`` places replicas, ``compose`` renders Kubernetes manifests and
``pulumi`` wires them into resources. Importing this package imports none of them, so
``modelplane --help`` stays fast and never touches the cloud SDKs.
"""

__version__ = "0.1.0"
