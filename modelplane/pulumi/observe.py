"""Reading what each workload cluster really has, for observed capacity in control-cluster mode.

`observe_cluster(api, cluster, fleet)` lists the cluster's Nodes that carry the pool label our
components set (`modelplane.ai/pool`) and its `resource.k8s.io/v1` ResourceSlices, and returns a
`scheduling.observed.ClusterObservation`: per pool, its nodes and the usable ones (Ready, and
publishing at least as many devices of each DRA driver as one node of the pool's class declares).
Any failure to list (refused, timed out, forbidden) is the cluster being unreachable, with the
error as its reason: an outage is judged by the grace clock, never by one failed read. Every
request has a bounded timeout (`TIMEOUT`). `usable_nodes` is the pure part, tested on its own.

The same Nodes and ResourceSlices, read into `api.slices.Published` (`devices`), are what the
cluster publishes for the InferenceCluster's DevicesMatchClasses condition (`compose.status_documents`):
no further request. When they cannot be read (the cluster cannot be reached, or a slice is not what
the API serves), the reason is returned instead and the cluster is not checked that run; the run goes on.

Only reads. Clusters whose kubeconfig is not plain text when the program plans (a cluster the run
provisions) are not observed and are planned as declared.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import replace
from typing import Any

import yaml
from kubernetes import client, config
from kubernetes.client.exceptions import ApiException
from urllib3.exceptions import HTTPError

from modelplane.api import Claim, Fleet, InferenceCluster
from modelplane.api.labels import POOL
from modelplane.api.slices import Published, SliceError, read_published
from modelplane.scheduling.observed import ClusterObservation, PoolObservation

TIMEOUT = 10
"""Seconds each list request may take."""


def node_ready(node: Mapping[str, Any]) -> bool:
    conditions = (node.get("status") or {}).get("conditions") or ()
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


def published(slices: Iterable[Mapping[str, Any]]) -> dict[str, Counter[str]]:
    """Node name -> devices published per DRA driver, from ResourceSlices (node-local ones only)."""
    out: dict[str, Counter[str]] = {}
    for item in slices:
        spec = item.get("spec") or {}
        node = spec.get("nodeName")
        if node:
            out.setdefault(node, Counter())[spec.get("driver", "")] += len(spec.get("devices") or ())
    return out


def usable_nodes(cluster: InferenceCluster, fleet: Fleet, nodes: Iterable[Mapping[str, Any]],
                 slices: Iterable[Mapping[str, Any]]) -> dict[str, PoolObservation]:
    """Per declared pool that has nodes: how many carry its label, and how many of those are usable."""
    devices = published(slices)
    labelled: dict[str, list[Mapping[str, Any]]] = {}
    for node in nodes:
        pool = ((node.get("metadata") or {}).get("labels") or {}).get(POOL)
        if pool is not None:
            labelled.setdefault(pool, []).append(node)
    out = {}
    for pool in cluster.spec.node_pools:
        members = labelled.get(pool.name, [])
        if not members:
            continue
        klass = fleet.inference_class(pool.class_name)
        needs: Counter[str] = Counter()
        for device in klass.spec.devices if klass is not None else ():
            if device.claim is Claim.DRA:
                needs[device.driver] += device.count
        usable = sum(1 for node in members if node_ready(node) and all(
            devices.get(node["metadata"]["name"], Counter())[driver] >= count for driver, count in needs.items()))
        out[pool.name] = PoolObservation(len(members), usable)
    return out


def devices(nodes: Iterable[Mapping[str, Any]], slices: Iterable[Mapping[str, Any]], source: str) -> Published | str:
    """What the nodes publish, from the pool-labelled Nodes and every ResourceSlice as listed (list items
    carry no kind); or why it cannot be read. Only labelled Nodes are listed, so a node without a Node
    object here is known to carry no pool label."""
    documents = [*({**n, "kind": "Node", "apiVersion": "v1"} for n in nodes),
                 *({**s, "kind": "ResourceSlice", "apiVersion": "resource.k8s.io/v1"} for s in slices)]
    try:
        published = read_published(documents, source)
    except SliceError as error:
        return "; ".join(error.problems)
    return replace(published, node_objects=True)


def observe_cluster(api: client.ApiClient, cluster: InferenceCluster, fleet: Fleet
                    ) -> tuple[ClusterObservation, Published | str]:
    """The cluster's observation, and what its nodes publish (or why that was not read)."""
    try:
        nodes = client.CoreV1Api(api).list_node(label_selector=POOL, _request_timeout=TIMEOUT).to_dict()["items"]
        slices = client.CustomObjectsApi(api).list_cluster_custom_object(
            "resource.k8s.io", "v1", "resourceslices", _request_timeout=TIMEOUT)["items"]
    except ApiException as error:
        return _unread(f"{error.status} {error.reason}")
    except (HTTPError, OSError) as error:
        return _unread(type(error).__name__)
    camel = [_camel_node(n) for n in nodes]
    return (ClusterObservation(True, usable_nodes(cluster, fleet, camel, slices)),
            devices(camel, slices, f"InferenceCluster {cluster.name}"))


def _unread(error: str) -> tuple[ClusterObservation, str]:
    return ClusterObservation(False, {}, error=error), f"the cluster could not be read: {error}"


def _camel_node(node: Mapping[str, Any]) -> dict[str, Any]:
    """The fields `usable_nodes` reads, from the client's snake_case `to_dict()`."""
    status = node.get("status") or {}
    return {"metadata": {"name": node["metadata"]["name"], "labels": node["metadata"].get("labels") or {}},
            "status": {"conditions": [{"type": c.get("type"), "status": c.get("status")}
                                      for c in status.get("conditions") or ()]}}


def observe_fleet(fleet: Fleet, kubeconfigs: Mapping[str, str]
                  ) -> tuple[dict[str, ClusterObservation], dict[str, Published | str]]:
    """Every cluster whose kubeconfig text is given, observed; and what each publishes (`observe_cluster`)."""
    out, published = {}, {}
    for cluster in fleet.clusters:
        text = kubeconfigs.get(cluster.name)
        if text is None:
            continue
        try:
            api = config.new_client_from_config_dict(yaml.safe_load(text))
        except (config.ConfigException, yaml.YAMLError, TypeError, AttributeError) as error:
            out[cluster.name], published[cluster.name] = _unread(f"unusable kubeconfig: {error}")
            continue
        with api:
            out[cluster.name], published[cluster.name] = observe_cluster(api, cluster, fleet)
    return out, published
