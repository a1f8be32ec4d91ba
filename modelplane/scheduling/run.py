"""The state of one planning run: the snapshot, the ledger and the per-run memos.

`Run` answers the questions every phase asks (may this cluster hold a replica of this deployment?
which options does this engine have on this cluster? does a whole replica fit right now?) and owns
the only mutable state of a run, the ledger. Memos are keyed by objects that live as long as the
run, so nothing leaks between runs.
"""

from __future__ import annotations

from dataclasses import dataclass

from modelplane.api import Engine, Fleet, ModelDeployment, Role, Workloads
from modelplane.cel import SelectorEvaluator
from modelplane.scheduling.engines import EngineOptions, engine_options
from modelplane.scheduling.ledger import Ledger, PoolKey, Trial
from modelplane.scheduling.match import Matcher
from modelplane.scheduling.placement import MemberPlacement, Replica
from modelplane.scheduling.reasons import Reason
from modelplane.scheduling.rules import cache_not_staged, selector_mismatch, untolerated_taint
from modelplane.scheduling.snapshot import ClusterView, Snapshot

EnginePlacements = dict[str, dict[Role, MemberPlacement]]


@dataclass(frozen=True)
class Fit:
    """A whole replica that fits a cluster: where each engine's members run, and what it costs."""

    engines: EnginePlacements
    charges: dict[PoolKey, int]


class Run:
    def __init__(self, fleet: Fleet, workloads: Workloads, evaluator: SelectorEvaluator | None = None):
        self.snapshot = Snapshot.of(fleet)
        self.workloads = workloads
        self.evaluator = evaluator or SelectorEvaluator()
        self.matcher = Matcher(self.evaluator)
        self.ledger = Ledger(self.snapshot)
        self._options: dict[tuple[int, str], EngineOptions] = {}
        self._usable: dict[int, frozenset[str]] = {}

    def ineligible(self, deployment: ModelDeployment, cluster: ClusterView, *, new: bool) -> Reason | None:
        """Rule 1 and the taint rules: why this cluster may not hold a (new, or retained) replica."""
        spec = deployment.spec
        cache = self.workloads.cache_of(deployment) if spec.model_cache_ref else None
        # The checks are skipped outright when there is nothing to check: this runs for every
        # (deployment, cluster) pair of the fleet.
        return ((spec.cluster_selector and selector_mismatch(cluster, spec.cluster_selector))
                or (cache and cache_not_staged(cluster, cache))
                or (cluster.taints and untolerated_taint(cluster, spec.tolerations, new=new))
                or None)

    def could_fit(self, deployment: ModelDeployment, cluster: ClusterView) -> bool:
        """A cheap, safe prefilter: False only when some engine has no pool on the cluster whose class
        it could use at all (so `engine_options` there is empty whatever the capacity)."""
        names = cluster.class_names
        return all(not names.isdisjoint(self._usable_classes(engine)) for engine in deployment.spec.engines)

    def _usable_classes(self, engine: Engine) -> frozenset[str]:
        """A superset of the classes on which some member of the engine matches and claims a DRA
        device (an engine claims on the pool of at least one of its members)."""
        found = self._usable.get(id(engine))
        if found is None:
            found = self._usable[id(engine)] = frozenset().union(
                *(self.matcher.usable_classes(member.node_selector, self.snapshot.classes) for member in engine.members))
        return found

    def options(self, deployment: ModelDeployment, engine_index: int, cluster: ClusterView) -> EngineOptions:
        engine = deployment.spec.engines[engine_index]
        key = (id(engine), cluster.name)
        found = self._options.get(key)
        if found is None:
            found = self._options[key] = engine_options(engine, cluster, self.matcher, self._usable_classes(engine))
        return found

    def fit(self, deployment: ModelDeployment, cluster: ClusterView) -> Fit | None:
        """Place every engine of one replica on `cluster` against the ledger, without charging it."""
        trial = Trial(self.ledger)
        engines: EnginePlacements = {}
        for index, engine in enumerate(deployment.spec.engines):
            option = self.options(deployment, index, cluster).choose(trial)
            if option is None:
                return None
            for pool, nodes in option.needs().items():
                trial.add(pool, nodes)
            engines[engine.name] = option.placement()
        return Fit(engines, dict(trial.charges))

    def commit(self, deployment: ModelDeployment, cluster: str, index: int, fit: Fit) -> Replica:
        self.ledger.charge(deployment.key, fit.charges)
        return Replica(deployment=deployment.key, cluster=cluster, index=index, engines=fit.engines)
