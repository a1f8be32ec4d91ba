"""Reading what each workload cluster really has, for observed capacity in control-cluster mode.

`observe_cluster(api, cluster, fleet)` lists the cluster's Nodes that carry the pool label our
components set (`modelplane.ai/pool`) and its `resource.k8s.io/v1` ResourceSlices, and returns a
`scheduling.observed.ClusterObservation`: per pool, its nodes and the usable ones (Ready, and
publishing at least as many devices of each DRA driver as one node of the pool's class declares).
Any failure to list (refused, timed out, forbidden) is the cluster being unreachable, with the
error as its reason: an outage is judged by the grace clock, never by one failed read. Every
request has a bounded timeout (`TIMEOUT`). `usable_nodes` is the pure part, tested on its own.

Only reads. Clusters whose kubeconfig is not plain text when the program plans (a cluster the run
provisions) are not observed and are planned as declared.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any

import yaml
from kubernetes import client, config
from kubernetes.client.exceptions import ApiException
from urllib3.exceptions import HTTPError

from modelplane.api import Claim, Fleet, InferenceCluster
from modelplane.api.labels import POOL
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


def observe_cluster(api: client.ApiClient, cluster: InferenceCluster, fleet: Fleet) -> ClusterObservation:
    try:
        nodes = client.CoreV1Api(api).list_node(label_selector=POOL, _request_timeout=TIMEOUT).to_dict()["items"]
        slices = client.CustomObjectsApi(api).list_cluster_custom_object(
            "resource.k8s.io", "v1", "resourceslices", _request_timeout=TIMEOUT)["items"]
    except ApiException as error:
        return ClusterObservation(False, {}, error=f"{error.status} {error.reason}")
    except (HTTPError, OSError) as error:
        return ClusterObservation(False, {}, error=type(error).__name__)
    return ClusterObservation(True, usable_nodes(cluster, fleet, [_camel_node(n) for n in nodes], slices))


def _camel_node(node: Mapping[str, Any]) -> dict[str, Any]:
    """The fields `usable_nodes` reads, from the client's snake_case `to_dict()`."""
    status = node.get("status") or {}
    return {"metadata": {"name": node["metadata"]["name"], "labels": node["metadata"].get("labels") or {}},
            "status": {"conditions": [{"type": c.get("type"), "status": c.get("status")}
                                      for c in status.get("conditions") or ()]}}


def observe_fleet(fleet: Fleet, kubeconfigs: Mapping[str, str]) -> dict[str, ClusterObservation]:
    """Every cluster whose kubeconfig text is given, observed."""
    out = {}
    for cluster in fleet.clusters:
        text = kubeconfigs.get(cluster.name)
        if text is None:
            continue
        try:
            api = config.new_client_from_config_dict(yaml.safe_load(text))
        except (config.ConfigException, yaml.YAMLError, TypeError, AttributeError) as error:
            out[cluster.name] = ClusterObservation(False, {}, error=f"unusable kubeconfig: {error}")
            continue
        with api:
            out[cluster.name] = observe_cluster(api, cluster, fleet)
    return out
