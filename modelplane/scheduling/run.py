"""The state of one planning run: the snapshot, the ledger and the per-run memos.

`Run` answers the questions every phase asks (may this cluster hold a replica of this deployment?
which clusters could hold one at all? does a whole replica fit on this cluster right now?) and owns
the only mutable state of a run, the ledger, with what follows from it: the clusters on which a
kind of replica no longer fits (`dead`). Memos are keyed by objects that live as long as the run,
so nothing leaks between runs, and by what decides the answer, so deployments that ask alike share
the work:
- which clusters a deployment may use at all: by its clusterSelector, its cache's and its
  tolerations (the eligible clusters, for a new replica or a kept one, from the clusters indexed
  by label and by taints), and by the classes its engines can claim on (the clusters
  that have such a pool, from the snapshot's class index);
- where an engine can run on a cluster: by the engine's `Shape` (engines.py).
"""

from __future__ import annotations

import copy
from collections.abc import Hashable
from dataclasses import dataclass
from typing import NamedTuple

from modelplane.api import Engine, Fleet, LabelSelector, ModelDeployment, Role, Workloads
from modelplane.cel import SelectorEvaluator
from modelplane.scheduling.engines import Options, Placements, Shape, choose, options_of, shape_key, shape_of
from modelplane.scheduling.ledger import Ledger, PoolKey, Trial
from modelplane.scheduling.match import Matcher
from modelplane.scheduling.packing import Use
from modelplane.scheduling.placement import MemberPlacement, Replica
from modelplane.scheduling.reasons import Reason
from modelplane.scheduling.cluster_rules import cache_not_staged, selector_mismatch, untolerated_taint
from modelplane.scheduling.snapshot import ClusterView, Snapshot

EnginePlacements = dict[str, dict[Role, MemberPlacement]]


class Fit(NamedTuple):
    """A whole replica that fits a cluster: where each engine's members run, and what it costs."""

    engines: EnginePlacements
    charges: dict[PoolKey, Use]


@dataclass(frozen=True)
class Candidates:
    """The clusters a deployment's new replicas may try, by position (so in name order)."""

    positions: tuple[int, ...]
    members: frozenset[int]


class Run:
    def __init__(self, fleet: Fleet, workloads: Workloads, evaluator: SelectorEvaluator | None = None):
        self.snapshot = Snapshot.of(fleet)
        self.workloads = workloads
        self.evaluator = evaluator or SelectorEvaluator()
        self.matcher = Matcher(self.evaluator, self.snapshot)
        self.ledger = Ledger(self.snapshot)
        self.placements = Placements(self.matcher)
        self.dead: dict[tuple[int, ...], set[int]] = {}
        """Per kind of replica (its engines' shapes), the clusters where it can no longer fit."""
        self._shape_of_engine: dict[int, tuple[Engine, int]] = {}
        """By the engine's identity, holding the engine so that no other object can take it over."""
        self._shape_of_key: dict[Hashable, int] = {}
        """By `shape_key`: engines of equal keys have equal shapes, worked out once."""
        self._shapes: dict[Shape, int] = {}
        self._shape_list: list[Shape] = []
        self._options: dict[tuple[int, int], Options] = {}
        self._reach: dict[int, frozenset[int]] = {}
        self._eligible: dict[Hashable, frozenset[int]] = {}
        self._candidates: dict[Hashable, Candidates] = {}
        self._claimed: dict[tuple[int, ...], frozenset[str]] = {}
        self.commits: list[tuple[Replica, dict[PoolKey, Use]]] | None = None
        """When a list, each replica charged and its charges, in order (capacity search, `rerun.py`)."""

    def fork(self, ledger: Ledger) -> Run:
        """A run of the same fleet and workloads on `ledger` (of this run's snapshot, pools maybe
        resized), with no pool marked dead. It shares every memo with this run: none depends on a
        pool's capacity or load (where an engine can run, eligibility, shapes and placements depend
        on classes, labels and taints)."""
        other = copy.copy(self)
        other.ledger = ledger
        other.dead = {}
        other.commits = None
        return other

    def ineligible(self, deployment: ModelDeployment, cluster: ClusterView, *, new: bool) -> Reason | None:
        """The Clusters rule: why this cluster may not hold a (new, or retained) replica."""
        spec = deployment.spec
        cache = self.workloads.cache_of(deployment) if spec.model_cache_ref else None
        # The checks are skipped outright when there is nothing to check.
        return ((spec.cluster_selector and selector_mismatch(cluster, spec.cluster_selector))
                or (cache and cache_not_staged(cluster, cache))
                or (cluster.taints and untolerated_taint(cluster, spec.tolerations, new=new))
                or None)

    def eligible(self, deployment: ModelDeployment, *, new: bool = True) -> frozenset[int]:
        """The positions of the clusters that may hold a new replica, or keep one (`new`=False; the
        Clusters rule): `ineligible` of each cluster, from the clusters indexed by label and by taints, so a kind of
        deployment costs a set intersection per label it selects and one taint check per distinct
        set of taints, not the rule on every cluster (varied 1,000 x 10,000, A/B pinned, best of 3
        re-places: fill 0.72 -> 0.61 CPU s; cold place: fill 4.81 -> 4.66)."""
        key = (self.eligibility_key(deployment), new)
        found = self._eligible.get(key)
        if found is None:
            spec = deployment.spec
            cache = self.workloads.cache_of(deployment) if spec.model_cache_ref else None
            found = self._labelled(spec.cluster_selector)
            if cache is not None:
                found = found & self._labelled(cache.spec.cluster_selector)
            for taints, (sample, positions) in self.snapshot.by_taints.items():
                if taints and untolerated_taint(sample, spec.tolerations, new=new):
                    found = found - positions
            found = self._eligible[key] = frozenset(found)
        return found

    def _labelled(self, selector: LabelSelector | None) -> frozenset[int]:
        """The positions of the clusters that carry every label `selector` asks for."""
        by_label = self.snapshot.by_label
        found = by_label[None]
        for label in selector.match_labels.items() if selector else ():
            found = found & by_label.get(label, frozenset())
        return found

    def eligibility_key(self, deployment: ModelDeployment) -> Hashable:
        """Everything `ineligible` reads of a deployment: equal keys, equal answers on every cluster."""
        spec = deployment.spec
        cache = self.workloads.cache_of(deployment) if spec.model_cache_ref else None
        staged = cache.spec.cluster_selector if cache else None
        return (_labels(spec.cluster_selector.match_labels if spec.cluster_selector else None),
                cache is not None, _labels(staged.match_labels if staged else None),
                tuple((t.key, t.operator, t.value, t.effect) for t in spec.tolerations))

    def candidates(self, deployment: ModelDeployment) -> Candidates:
        """The eligible clusters on which every engine has a pool whose class some member claims on
        (a superset of where a replica can fit, whatever the capacity)."""
        shapes = self.kind(deployment)
        key = (self.eligibility_key(deployment), shapes)
        found = self._candidates.get(key)
        if found is None:
            members = self.eligible(deployment).intersection(*(self._reaching(shape) for shape in shapes))
            found = self._candidates[key] = Candidates(tuple(sorted(members)), members)
        return found

    def claimed(self, deployment: ModelDeployment) -> frozenset[str]:
        """The classes on which some member of the deployment claims a device: the only classes
        of the pools its options hold."""
        kind = self.kind(deployment)
        found = self._claimed.get(kind)
        if found is None:
            found = self._claimed[kind] = frozenset().union(
                *(claims for shape in kind for claims in self._shape_list[shape].claims))
        return found

    def kind(self, deployment: ModelDeployment) -> tuple[int, ...]:
        """The shapes of the deployment's engines: replicas of one kind fit exactly where each other do."""
        return tuple(self.shape(engine) for engine in deployment.spec.engines)

    def shape(self, engine: Engine) -> int:
        """The engine's shape, as a number shared by every engine of the same shape."""
        held = self._shape_of_engine.get(id(engine))
        if held is not None:
            return held[1]
        key = shape_key(engine, self.matcher)
        found = self._shape_of_key.get(key)
        if found is None:
            shape = shape_of(engine, self.matcher, self.snapshot)
            found = self._shape_of_key[key] = self._shapes.setdefault(shape, len(self._shapes))
            if found == len(self._shape_list):
                self._shape_list.append(shape)
        self._shape_of_engine[id(engine)] = (engine, found)
        return found

    def reach(self, engine: Engine) -> frozenset[int]:
        """The positions of the clusters with a pool whose class some member of the engine claims on:
        elsewhere the engine has no option at all."""
        return self._reaching(self.shape(engine))

    def _reaching(self, shape: int) -> frozenset[int]:
        found = self._reach.get(shape)
        if found is None:
            classes = frozenset().union(*self._shape_list[shape].claims)
            with_class = self.snapshot.with_class
            found = self._reach[shape] = frozenset().union(*(with_class.get(name, ()) for name in classes))
        return found

    def options(self, engine: Engine, cluster: ClusterView) -> Options:
        shape = self.shape(engine)
        key = (shape, cluster.position)
        found = self._options.get(key)
        if found is None:
            found = self._options[key] = options_of(self._shape_list[shape], cluster)
        return found

    def fit(self, deployment: ModelDeployment, cluster: ClusterView) -> Fit | None:
        """Place every engine of one replica on `cluster` against the ledger, without charging it."""
        trial = Trial(self.ledger)
        chosen = []
        for engine in deployment.spec.engines:
            option = choose(self.options(engine, cluster), trial)
            if option is None:
                return None
            trial.add(option.needs)
            chosen.append((engine, option))
        return Fit({engine.name: self.placements.of(engine, option.pools) for engine, option in chosen}, trial.charges)

    def hopeless(self, deployment: ModelDeployment, cluster: ClusterView) -> bool:
        """After `fit` failed: whether no replica of this kind can ever fit the cluster again in
        this run. Free nodes only shrink, so an engine that fits nowhere on its own never will; a
        replica whose engines each fit alone may fit later (the greedy choice of an earlier engine
        can change as pools fill), so only the first case is final."""
        engines = deployment.spec.engines
        return len(engines) == 1 or any(choose(self.options(engine, cluster), Trial(self.ledger)) is None
                                        for engine in engines)

    def commit(self, deployment: ModelDeployment, cluster: str, index: int, fit: Fit) -> Replica:
        self.ledger.charge(deployment.key, fit.charges)
        replica = Replica.trusted(deployment=deployment.key, cluster=cluster, index=index, engines=fit.engines)
        if self.commits is not None:
            self.commits.append((replica, fit.charges))
        return replica


def _labels(labels: dict[str, str] | None) -> tuple[tuple[str, str], ...] | None:
    return None if labels is None else tuple(sorted(labels.items()))
