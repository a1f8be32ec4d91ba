"""Control-cluster mode under Pulumi's mocks: a refusal never turns into a deletion.

The real program runs three times against the objects recorded from a real API server
(`recorded_api.RecordedCluster`), each run reading back the previous run's outputs as the engine's
`readStackOutputs` returns them. Between the first and second runs the InferenceClass of the GKE
cluster gets issue 22's `capacity: {memory: {value: 80GB}}` (the CRD admits it, the loader refuses
it), the GKE cluster a new node count, and the deployment a ModelCache that does not exist: the
second run registers every resource with the same inputs as the first (nothing deleted, replaced or
moved), writes the refusals to the statuses and lists them in `refused`. Fixing the edits converges.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from modelplane.api.accepted import OUTPUT
from tests.pulumi.harness import Engine, Registration, run_program
from tests.pulumi.recorded_api import RecordedCluster
from tests.pulumi.test_control_cluster import QWEN, STATUS, cluster, cluster_config, status_of  # noqa: F401

CLASS = ("InferenceClass", "", "gke-l4-1x-g2")
GKE = ("InferenceCluster", "", "gke-us-central")
POOL = "modelplane:gke-us-central-gke:l4"


def owned(registered: list[Registration]) -> dict[str, tuple[str, Any]]:
    """Every resource the stack owns, with its inputs (the status writer aside: it reports, owns nothing)."""
    return {r.name: (r.typ, r.inputs) for r in registered if r.typ != STATUS}


def edit(cluster: RecordedCluster) -> None:
    gpu_class = cluster.find(*CLASS)
    gke = cluster.find(*GKE)
    qwen = cluster.find(*QWEN)
    assert gpu_class is not None and gke is not None and qwen is not None
    gpu_class["spec"]["devices"][0]["capacity"] = {"memory": {"value": "80GB"}}
    gke["spec"]["nodePools"][0]["nodeCount"] = 2
    qwen["spec"]["modelCacheRef"], qwen["spec"]["replicas"] = {"name": "missing"}, 4


def test_a_refused_edit_changes_nothing_the_stack_owns_and_says_why(cluster: RecordedCluster) -> None:
    engine = Engine()
    first = run_program(engine, cluster_config())
    assert OUTPUT in first.outputs and first.outputs["refused"]["ModelDeployment ml-team/typo"]["plannedWith"] == \
        "nothing: never accepted, skipped"
    edit(cluster)

    preview = run_program(Engine(state=copy.deepcopy(engine.state), stack_outputs=first.outputs, preview=True),
                          cluster_config())
    assert owned(preview.engine.registered) == owned(engine.registered)

    second = run_program(Engine(state=copy.deepcopy(engine.state), stack_outputs=first.outputs), cluster_config())
    assert owned(second.engine.registered) == owned(engine.registered), "same resources, same inputs"
    assert second.outputs["placement"] == first.outputs["placement"]
    assert second.outputs[OUTPUT] == first.outputs[OUTPUT], "the accepted versions stay the last accepted ones"
    refused = second.outputs["refused"]
    assert refused["InferenceClass gke-l4-1x-g2"]["plannedWith"] == "its last accepted version"
    assert refused["InferenceClass gke-l4-1x-g2"]["held"] == ["InferenceCluster gke-us-central",
                                                              "InferenceGateway default"]
    assert refused["InferenceClass gke-l4-1x-g2"]["problems"][0].startswith("spec.devices[0].capacity")
    assert refused["ModelDeployment ml-team/qwen3-8b"]["problems"] == [
        "spec.modelCacheRef.name: ModelCache 'missing' is not defined in namespace 'ml-team' (defined there: none)"]
    qwen = status_of(cluster, *QWEN)
    ready = next(c for c in qwen["conditions"] if c["type"] == "Ready")
    assert (qwen["ready"], ready["status"], ready["reason"]) == ("2/2", "False", "InvalidSpec")
    assert ready["message"].startswith("spec.modelCacheRef.name: ModelCache 'missing' is not defined")
    logged = "\n".join(second.logs)
    assert "InferenceCluster gke-us-central: held: planned with its last accepted version" in logged

    gpu_class, gke, deployment = cluster.find(*CLASS), cluster.find(*GKE), cluster.find(*QWEN)
    assert gpu_class is not None and gke is not None and deployment is not None
    gpu_class["spec"]["devices"][0]["capacity"] = {"memory": {"value": "23034Mi"}}
    del deployment["spec"]["modelCacheRef"]
    third = run_program(Engine(state=copy.deepcopy(second.engine.state), stack_outputs=second.outputs),
                        cluster_config())
    assert "InferenceClass gke-l4-1x-g2" not in third.outputs["refused"]
    assert third.outputs["placement"]["ml-team/qwen3-8b"]["scheduled"] == "4/4", "the fixed edit applies"
    assert [third.engine.named(POOL).inputs["initialNodeCount"], second.engine.named(POOL).inputs["initialNodeCount"]
            ] == [2, 1], "the held cluster's node count waited, then applied"
    status = status_of(cluster, *QWEN)
    assert next(c for c in status["conditions"] if c["type"] == "Ready")["status"] == "True"


def test_a_stack_with_no_record_stops_on_a_refusal_rather_than_delete(cluster: RecordedCluster) -> None:
    engine = Engine()
    first = run_program(engine, cluster_config())
    upgraded = {key: value for key, value in first.outputs.items() if key not in (OUTPUT, "refused")}
    edit(cluster)
    with pytest.raises(Exception, match="the run cannot keep what it owns because the stack's state has no "
                                        "acceptedObjects output"):
        run_program(Engine(state=copy.deepcopy(engine.state), stack_outputs=upgraded, preview=True), cluster_config())
