"""Rendering with stranded replicas: what stays on a cluster that cannot be reached.

`with_stranded(manifests, placement, stranded, settings, secrets)` is `render(manifests, placement,
...)` except that every cluster holding a stranded replica (`scheduling.observed.stranded`: re-placed
elsewhere, its own cluster unreachable) gets its objects from the placement *with* those replicas.
Those are the objects the last run applied there, unchanged, so the run registers nothing new and
deletes nothing on a cluster that cannot answer. Routing, endpoints and serving stacks come from the
live placement only: no traffic is sent to a stranded replica. Pure and deterministic.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import replace

from modelplane.api import Manifests
from modelplane.compose.renderer import Rendered, render
from modelplane.compose.secrets import SecretKey
from modelplane.compose.settings import Settings
from modelplane.scheduling import Placement
from modelplane.scheduling.placement import Replica


def with_stranded(manifests: Manifests, placement: Placement, stranded: Sequence[Replica],
                  settings: Settings = Settings(), secrets: Collection[SecretKey] = ()) -> Rendered:
    live = render(manifests, placement, settings, secrets=secrets)
    if not stranded:
        return live
    both = placement.model_copy(update={"replicas": tuple(sorted((*placement.replicas, *stranded),
                                                                 key=lambda r: r.slot))})
    kept = render(manifests, both, settings, secrets=secrets)
    frozen = {replica.cluster for replica in stranded}
    return replace(live, clusters=dict(sorted({**live.clusters, **{c: kept.clusters[c] for c in frozen}}.items())))
