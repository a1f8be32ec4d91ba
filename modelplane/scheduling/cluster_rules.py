"""Rule 1, Clusters: may a cluster hold a replica of a deployment at all, before any pool is looked at.

One function per check, returning None when it passes, else a Reason: `clusterSelector.matchLabels`
against the cluster's labels; with a ModelCache that has a clusterSelector, only clusters both
select; no untolerated taint (NoSchedule or NoExecute for a new replica, NoExecute for a retained
one). Taints and tolerations follow Kubernetes' semantics (k8s.io/api/core/v1
`Toleration.ToleratesTaint`): an empty toleration effect matches every effect, an `Exists`
toleration with no key matches every taint, `Equal` compares values (unset reads as "").

The placement rules are numbered as in the README's "How placement works", each once, in the module
that implements it (Clusters here, Pools in match.py, Engines and Pool choice in engines.py,
Capacity in ledger.py, Retain and Scale down in retain.py, Fill in fill.py); elsewhere they are
named (the Clusters rule, the Retain rule).
"""

from __future__ import annotations

from modelplane.api import LabelSelector, ModelCache, TaintEffect, Toleration, TolerationOperator
from modelplane.api.fleet import Taint
from modelplane.invariants import present
from modelplane.scheduling.reasons import Code, Reason
from modelplane.scheduling.snapshot import ClusterView

BLOCKS_NEW = frozenset({TaintEffect.NO_SCHEDULE, TaintEffect.NO_EXECUTE})
EVICTS = frozenset({TaintEffect.NO_EXECUTE})


def selector_mismatch(cluster: ClusterView, selector: LabelSelector | None) -> Reason | None:
    """`clusterSelector.matchLabels` equality against the cluster's labels (unset = all)."""
    missed = _first_mismatch(cluster, selector)
    if missed is None:
        return None
    key, want, seen = missed
    return Reason(Code.CLUSTER_LABELS, "didn't match the deployment's clusterSelector", cluster.name,
                  detail=f"wants {key}={want}, the cluster {seen}",
                  hint=f"label the cluster {key}={want} or relax spec.clusterSelector")


def cache_not_staged(cluster: ClusterView, cache: ModelCache | None) -> Reason | None:
    """A deployment with a ModelCache runs only where the cache's clusterSelector stages it."""
    missed = _first_mismatch(cluster, cache.spec.cluster_selector) if cache else None
    if missed is None:
        return None
    key, want, seen = missed
    cache = present(cache, "a cache's clusterSelector mismatch comes from a cache")
    return Reason(Code.CACHE_NOT_STAGED, f"do not stage ModelCache {cache.name}", cluster.name,
                  detail=f"the cache's clusterSelector wants {key}={want}, the cluster {seen}",
                  hint="widen the ModelCache's clusterSelector to this cluster")


def _first_mismatch(cluster: ClusterView, selector: LabelSelector | None) -> tuple[str, str, str] | None:
    """The first label (by key) the cluster does not carry as the selector wants, and what it has."""
    if selector is None:
        return None
    labels = cluster.labels
    missed = [key for key, want in selector.match_labels.items() if labels.get(key) != want]
    if not missed:
        return None
    key = min(missed)
    have = labels.get(key)
    return key, selector.match_labels[key], f"has {key}={have}" if have is not None else f"has no label {key}"


def untolerated_taint(cluster: ClusterView, tolerations: tuple[Toleration, ...], *, new: bool) -> Reason | None:
    """Fill skips clusters with untolerated NoSchedule or NoExecute taints; Retain (new=False)
    honours only NoExecute: NoSchedule keeps new replicas off but lets existing ones stay."""
    effects = BLOCKS_NEW if new else EVICTS
    for taint in cluster.taints:
        if taint.effect in effects and not any(tolerates(t, taint) for t in tolerations):
            return Reason(Code.UNTOLERATED_TAINT, f"had untolerated taint {{{taint}}}", cluster.name,
                          detail=f"taint {taint} is not tolerated by spec.tolerations",
                          hint=f"add a toleration {{key: {taint.key}, operator: Exists, effect: {taint.effect}}}")
    return None


def tolerates(toleration: Toleration, taint: Taint) -> bool:
    if toleration.effect is not None and toleration.effect is not taint.effect:
        return False
    if toleration.operator is TolerationOperator.EXISTS:
        return not toleration.key or toleration.key == taint.key
    return toleration.key == taint.key and (toleration.value or "") == (taint.value or "")
