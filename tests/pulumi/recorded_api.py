"""A stand-in control cluster for unit tests: the official `kubernetes` client talking to recorded answers.

`RecordedCluster(objects, secrets)` plays the API server's part below the client's HTTP pool (so the
client's own URL building, serialization and error mapping run for real): it lists and gets the
recorded modelplane.ai objects and Secrets (tests/data/control-cluster), applies JSON patches to the
status subresource and keeps every write in `writes`, and answers 404 for what it does not hold.
`client()` is what `control_cluster.connect` would return for it.
"""

from __future__ import annotations

import copy
import io
import json
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlparse

import urllib3
from kubernetes import client

from modelplane.api.crds import SERVED_KINDS

PLURALS = {served.plural: served.kind for served in SERVED_KINDS}
PREFIX = "/apis/modelplane.ai/v1alpha1/"


@dataclass
class Write:
    path: str
    content_type: str
    body: Any


@dataclass
class RecordedCluster:
    objects: list[dict[str, Any]]
    secrets: list[dict[str, Any]] = field(default_factory=list)
    writes: list[Write] = field(default_factory=list)
    status_code: int | None = None
    """Answer every request with this status instead (an API server that refuses)."""

    def client(self) -> client.ApiClient:
        configuration = client.Configuration()
        configuration.host = "https://control.example:6443"
        api = client.ApiClient(configuration)
        api.rest_client.pool_manager = self  # type: ignore[assignment]
        return api

    def request(self, method: str, url: str, body: str | None = None, headers: dict[str, str] | None = None,
                **_: Any) -> urllib3.HTTPResponse:
        if self.status_code is not None:
            return _answer(self.status_code, {"kind": "Status", "code": self.status_code})
        path = urlparse(url).path
        if path.startswith("/api/v1/namespaces/"):
            _, _, _, namespace, _, name = path.strip("/").split("/")
            found = [s for s in self.secrets if (s["metadata"]["namespace"], s["metadata"]["name"]) == (namespace, name)]
            return _answer(200, found[0]) if found else _answer(404, {"kind": "Status", "code": 404})
        parts = path.removeprefix(PREFIX).split("/")
        if method == "GET" and len(parts) == 1:
            return _answer(200, {"kind": f"{PLURALS[parts[0]]}List",
                                 "items": [o for o in self.objects if o["kind"] == PLURALS[parts[0]]]})
        status = parts[-1] == "status"
        parts = parts[:-1] if status else parts
        namespace, plural, name = (parts[1], parts[2], parts[3]) if parts[0] == "namespaces" else ("", *parts)
        obj = self.find(PLURALS[plural], namespace, name)
        if obj is None:
            return _answer(404, {"kind": "Status", "code": 404})
        if method == "PATCH":
            patch = json.loads(body or "null")
            self.writes.append(Write(path, (headers or {}).get("Content-Type", ""), patch))
            assert patch == [{"op": "add", "path": "/status", "value": patch[0]["value"]}], patch
            obj["status"] = copy.deepcopy(patch[0]["value"])
        return _answer(200, obj)

    def find(self, kind: str, namespace: str, name: str) -> dict[str, Any] | None:
        return next((o for o in self.objects if o["kind"] == kind and o["metadata"]["name"] == name
                     and o["metadata"].get("namespace", "") == namespace), None)


def _answer(status: int, data: Any) -> urllib3.HTTPResponse:
    return urllib3.HTTPResponse(body=io.BytesIO(json.dumps(data).encode()), status=status, reason=str(status),
                                headers={"Content-Type": "application/json"}, preload_content=False)
