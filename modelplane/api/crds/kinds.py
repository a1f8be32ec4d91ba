"""How the API server serves each kind: names, scope, subresources, printer columns, name rules.

The seven kinds of `modelplane.ai/v1alpha1`, in the order the README lists them. Short names and
the `modelplane` category are the Crossplane-based Modelplane's (`kubectl get modelplane` lists
every object). ModelDeployment serves the scale subresource (`spec.replicas`, `status.replicas`,
and `status.selector`, which the HPA behind a KEDA ScaledObject requires of its scale target);
the kinds the control plane writes status to serve the status subresource.
"""

from __future__ import annotations

from dataclasses import dataclass

from modelplane.api.base import API_VERSION
from modelplane.api.crds.rules import Rule
from modelplane.api.fleet import InferenceClass, InferenceCluster
from modelplane.api.gateway import InferenceGateway
from modelplane.api.loader import NAMESPACED
from modelplane.api.manifests import Manifest
from modelplane.api.workload import ModelCache, ModelDeployment, ModelEndpoint, ModelService

CATEGORY = "modelplane"


@dataclass(frozen=True)
class Column:
    """An `additionalPrinterColumns` entry of `kubectl get`."""

    name: str
    json_path: str
    description: str
    type: str = "string"
    priority: int = 0

    def to_schema(self) -> dict[str, object]:
        column: dict[str, object] = {"name": self.name, "type": self.type, "jsonPath": self.json_path,
                                     "description": self.description}
        if self.priority:
            column["priority"] = self.priority
        return column


AGE = Column("Age", ".metadata.creationTimestamp", "Time since the object was created.", type="date")

DNS_LABEL_NAME = Rule("size(self.metadata.name) <= 63 && !self.metadata.name.contains('.')",
                      "metadata.name must be a DNS label: at most 63 characters, no dots")
STARTS_WITH_LETTER = Rule("self.metadata.name.matches('^[a-z]')",
                          "metadata.name must start with a letter: it prefixes Kubernetes Service names")
CLUSTER_NAME = Rule("size(self.metadata.name) <= 40 && self.metadata.name.matches('^[a-z]')",
                    "metadata.name names a GKE or EKS cluster: at most 40 characters, starting with a letter")


@dataclass(frozen=True)
class ServedKind:
    model: type[Manifest]
    plural: str
    short_names: tuple[str, ...]
    description: str
    """What the kind is, for `kubectl explain <kind>`."""
    columns: tuple[Column, ...] = ()
    status: bool = False
    """Serves the status subresource: the control plane writes the object's status."""
    scale: bool = False
    """Serves the scale subresource (ModelDeployment: `kubectl scale`, KEDA)."""
    name_rules: tuple[Rule, ...] = (DNS_LABEL_NAME,)

    @property
    def kind(self) -> str:
        return self.model.model_fields["kind"].default

    @property
    def namespaced(self) -> bool:
        return self.kind in NAMESPACED

    @property
    def crd_name(self) -> str:
        return f"{self.plural}.{API_VERSION.partition('/')[0]}"


SERVED_KINDS = (
    ServedKind(InferenceClass, "inferenceclasses", ("icl",),
               "The hardware of one node of a pool: DRA-style devices (driver, typed attributes, capacity "
               "quantities, count per node) and how a cloud provisions such a node. Cluster-scoped; published "
               "by the platform team.",
               (Column("Driver", ".spec.devices[0].driver", "The DRA driver of the class's first device."),
                Column("Description", ".spec.description", "What the hardware is.", priority=1), AGE),
               status=True),
    ServedKind(InferenceCluster, "inferenceclusters", ("ic",),
               "A GPU cluster of the fleet: provisioned on GKE, EKS, AKS, Nebius or Vultr, or an existing one "
               "reached by kubeconfig, with node pools that each name an InferenceClass. Its labels are what "
               "deployments select on. Cluster-scoped; published by the platform team.",
               (Column("Source", ".spec.cluster.source", "Where the cluster runs."),
                Column("Health", ".status.health", "Up, Down, Expired or Unobserved, as the last run saw it."), AGE),
               status=True, name_rules=(DNS_LABEL_NAME, CLUSTER_NAME)),
    ServedKind(InferenceGateway, "inferencegateways", ("ig",),
               "The fleet's one OpenAI-compatible front door: the cluster that hosts it and the proxy that runs "
               "it. Cluster-scoped; one per fleet.",
               (Column("Cluster", ".spec.cluster", "The InferenceCluster that hosts the gateway."),
                Column("Backend", ".spec.backend", "The proxy that runs the gateway."),
                Column("Address", ".status.address", "The gateway's external address."), AGE),
               status=True),
    ServedKind(ModelDeployment, "modeldeployments", ("md",),
               "A model served across the fleet: `replicas` complete serving instances of its `engines`, each "
               "placed by the fleet scheduler on a cluster and node pool with free, compatible devices. Serves "
               "the scale subresource, so `kubectl scale` and KEDA set spec.replicas.",
               (Column("Ready", ".status.ready", "Scheduled over desired replicas."),
                Column("Clusters", ".status.clusters", "The clusters the replicas run on."), AGE),
               status=True, scale=True, name_rules=(DNS_LABEL_NAME, STARTS_WITH_LETTER)),
    ServedKind(ModelCache, "modelcaches", ("mc",),
               "Model weights from Hugging Face, staged once per cluster on a ReadWriteMany volume and mounted "
               "at /mnt/models by the deployments that reference the cache.",
               (Column("Repo", ".spec.huggingFace.repo", "The Hugging Face repository."),
                Column("Size", ".spec.huggingFace.sizeGiB", "Size of the weights in GiB.", type="integer"), AGE),
               status=True),
    ServedKind(ModelService, "modelservices", ("ms",),
               "One OpenAI-compatible URL on the fleet gateway, weighted across the endpoints its selectors "
               "match: deployments' replicas and ModelEndpoints.",
               (Column("URL", ".status.url", "The service's base URL on the fleet gateway."), AGE),
               status=True, name_rules=(DNS_LABEL_NAME, STARTS_WITH_LETTER)),
    ServedKind(ModelEndpoint, "modelendpoints", ("me",),
               "An endpoint outside the fleet (a hosted API, another cluster) a ModelService can route to.",
               (Column("URL", ".spec.url", "The endpoint's base URL."), AGE), status=True),
)
