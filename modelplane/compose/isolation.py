"""Who may reach the pods Modelplane runs in a model namespace: a NetworkPolicy per namespace.

Invariants:
- Every namespace that holds a replica gets one NetworkPolicy, `ENGINE_POLICY`, selecting every pod
  Modelplane renders there (labelled `app.kubernetes.io/managed-by: modelplane`: engine pods, the
  endpoint picker, download Jobs). Ingress to them is allowed only from
  - the cluster's inference Gateway: Envoy Gateway's proxy pods for Gateway `inference` of
    modelplane-system, which run in Envoy Gateway's namespace (`ENVOY_GATEWAY_NAMESPACE`) and carry its
    `gateway.envoyproxy.io/owning-gateway-name|namespace` labels (Envoy Gateway v1.7
    internal/gatewayapi/translator.go); this covers the proxy calling an endpoint picker;
  - Modelplane's own pods of the same namespace: a gang's leader and workers, prefill and decode
    engines and the routing sidecar, the endpoint picker reaching the engines it scores.
  Nothing else: other namespaces' pods, and the namespace's own pods that Modelplane did not render.
- Egress is not restricted (engines download weights, reach ModelExpress, and each other).
- A cluster without a NetworkPolicy implementation (a CNI that enforces them) ignores the policy;
  docs/security.md says so.
"""

from __future__ import annotations

from modelplane.compose import names
from modelplane.compose.stack import ENVOY_GATEWAY_NAMESPACE, INFERENCE_GATEWAY, SYSTEM_NAMESPACE

ENGINE_POLICY = "modelplane-engines"
OWNING_GATEWAY_NAME = "gateway.envoyproxy.io/owning-gateway-name"
OWNING_GATEWAY_NAMESPACE = "gateway.envoyproxy.io/owning-gateway-namespace"


def proxy_pods(gateway: str) -> dict[str, str]:
    """The labels of the proxy pods Envoy Gateway runs for Gateway `gateway` of modelplane-system."""
    return {OWNING_GATEWAY_NAME: gateway, OWNING_GATEWAY_NAMESPACE: SYSTEM_NAMESPACE}


def engine_policy(namespace: str) -> dict:
    """The namespace's NetworkPolicy, as the module docstring says."""
    gateway = {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": ENVOY_GATEWAY_NAMESPACE}},
               "podSelector": {"matchLabels": proxy_pods(INFERENCE_GATEWAY)}}
    return {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
            "metadata": {"name": ENGINE_POLICY, "namespace": namespace, "labels": names.managed()},
            "spec": {"podSelector": {"matchLabels": names.managed()}, "policyTypes": ["Ingress"],
                     "ingress": [{"from": [gateway, {"podSelector": {"matchLabels": names.managed()}}]}]}}
