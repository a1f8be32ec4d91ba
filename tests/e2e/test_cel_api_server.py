"""Every case of tests/cel/verdicts.py, submitted to a real kube-apiserver 1.34.4 as a
ResourceClaimTemplate's device selector (a server-side dry run): the API server's accept/reject
verdict is the one the table records, and, for the cases modelplane agrees on, ours too
(`modelplane.cel.check_selector`, what `modelplane validate` runs). A recorded divergence must
still be one: the server keeps the verdict the table gives it.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from kubernetes.client import ResourceV1Api
from kubernetes.client.exceptions import ApiException

from modelplane.cel import SelectorError, check_selector
from tests.cel.verdicts import CASES, DIVERGENCES, Case
from tests.e2e.conftest import api_client
from modelplane.local.servers import Fleet


@pytest.fixture(scope="module")
def resource_api(fleet: Fleet) -> ResourceV1Api:
    return ResourceV1Api(api_client(fleet.clusters["east"]))


def template(expression: str) -> dict[str, Any]:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate", "metadata": {"name": "selector"},
            "spec": {"spec": {"devices": {"requests": [{"name": "gpu", "exactly": {
                "deviceClassName": "gpu.example.com", "selectors": [{"cel": {"expression": expression}}]}}]}}}}


def server_admits(api: ResourceV1Api, expression: str) -> tuple[bool, str]:
    """Whether the API server admits the selector, and its message when it does not."""
    try:
        api.create_namespaced_resource_claim_template("default", template(expression), dry_run="All")
    except ApiException as error:
        assert error.status == 422, f"not a validation error: {error.status} {error.body}"
        return False, json.loads(error.body)["message"]
    return True, ""


def we_admit(expression: str) -> bool:
    try:
        check_selector(expression)
    except SelectorError:
        return False
    return True


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_the_api_server_and_we_agree(case: Case, resource_api: ResourceV1Api) -> None:
    admitted, message = server_admits(resource_api, case.cel)
    assert admitted is case.admitted, f"the table says {case.kubernetes} ({case.source}); the server: {message}"
    assert we_admit(case.cel) is admitted


@pytest.mark.parametrize("case", DIVERGENCES, ids=lambda c: c.name)
def test_recorded_divergences_hold_on_the_api_server(case: Case, resource_api: ResourceV1Api) -> None:
    admitted, message = server_admits(resource_api, case.cel)
    assert admitted is case.admitted, f"the table says {case.kubernetes} ({case.source}); the server: {message}"
