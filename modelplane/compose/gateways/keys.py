"""API keys on a Gateway: Envoy Gateway's SecurityPolicy `apiKeyAuth`, the same on the fleet Gateway
(`InferenceGateway.spec.auth`) and on a workload cluster's inference Gateway (`InferenceCluster.spec.gateway.auth`,
for fleets without an InferenceGateway).

The policy lives beside the Gateway in modelplane-system and names the Opaque Secret there whose every key is
a client id and value its API key. A request must send `Authorization: Bearer <key>`; Envoy Gateway removes
that header before forwarding (`sanitize`), so no key reaches an engine or an external endpoint, and sends the
matched client id upstream as `x-client-id`. Field names from Envoy Gateway v1.7.0's SecurityPolicy CRD
(`api/v1alpha1/api_key_auth_types.go`).
"""

from __future__ import annotations

from modelplane.api import GatewayAuth
from modelplane.compose import names
from modelplane.compose.stack import SYSTEM_NAMESPACE

SECURITY_POLICY_API = "gateway.envoyproxy.io/v1alpha1"
CLIENT_ID_HEADER = "x-client-id"


def api_key_policy(gateway: str, auth: GatewayAuth) -> dict:
    """The SecurityPolicy (named like the Gateway) that makes Gateway `gateway` require one of `auth`'s keys."""
    return {"apiVersion": SECURITY_POLICY_API, "kind": "SecurityPolicy",
            "metadata": {"name": gateway, "namespace": SYSTEM_NAMESPACE, "labels": names.managed()},
            "spec": {"targetRefs": [{"group": "gateway.networking.k8s.io", "kind": "Gateway", "name": gateway}],
                     "apiKeyAuth": {"credentialRefs": [{"group": "", "kind": "Secret",
                                                        "name": auth.api_keys_secret}],
                                    "extractFrom": [{"headers": ["Authorization"]}],
                                    "forwardClientIDHeader": CLIENT_ID_HEADER, "sanitize": True}}}
