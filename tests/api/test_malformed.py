"""Malformed input never produces a traceback: `modelplane validate` reports each problem as
`FILE:LINE: KIND NS/NAME: FIELD.PATH: message` and exits 1 (issue 2: at least 40 distinct inputs).

Each case is a file's content and the line fragment (field path and message) it must produce.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import pytest

from modelplane.cli import main

GOOD = """\
apiVersion: modelplane.ai/v1alpha1
kind: ModelDeployment
metadata:
  name: m
  namespace: ml
  labels: {team: a}
spec:
  replicas: 1
  engines:
  - name: e
    members:
    - role: Standalone
      nodeSelector:
        devices:
        - name: gpu
          count: 1
          selectors:
          - cel: device.driver == "gpu.nvidia.com"
      template:
        spec:
          containers:
          - name: engine
            image: vllm
            env: [{name: A, value: b}]
"""

CLUSTER = """\
apiVersion: modelplane.ai/v1alpha1
kind: InferenceCluster
metadata: {name: c}
spec:
  cluster: {source: Existing, existing: {kubeconfig: cKubeconfig}}
  nodePools:
  - {name: p, className: k, nodeCount: 1}
"""

CLASS = """\
apiVersion: modelplane.ai/v1alpha1
kind: InferenceClass
metadata: {name: k}
spec:
  devices:
  - name: gpu
    driver: gpu.nvidia.com
    deviceClassName: gpu.nvidia.com
    attributes: {architecture: {string: Hopper}}
    capacity: {memory: {value: 80Gi}}
"""

CACHE = """\
apiVersion: modelplane.ai/v1alpha1
kind: ModelCache
metadata: {name: w, namespace: ml}
spec:
  huggingFace: {repo: org/model, revision: main, sizeGiB: 10}
"""


def swap(text: str, old: str, new: str) -> str:
    assert old in text, old
    return text.replace(old, new, 1)


@dataclass
class Bad:
    name: str
    content: str | bytes
    want: str
    """A fragment of the problem line; the line must also start with `FILE:LINE:`."""
    file_level: bool = False


CASES = [
    Bad("unclosed flow sequence", "a: [1, 2\n", "invalid YAML at column 1: did not find expected ',' or ']'"),
    Bad("a tab where indentation belongs", "a:\n\tb: 1\n", "invalid YAML"),
    Bad("a document that is a list", "- 1\n- 2\n", "a manifest is a mapping with apiVersion, kind, metadata and spec; got a list"),
    Bad("a document that is a scalar", "hello\n", "a manifest is a mapping with apiVersion, kind, metadata and spec; got str 'hello'"),
    Bad("no apiVersion", swap(GOOD, "apiVersion: modelplane.ai/v1alpha1\n", ""), "apiVersion: apiVersion is required: modelplane.ai/v1alpha1"),
    Bad("an unknown version of our API", swap(GOOD, "modelplane.ai/v1alpha1", "modelplane.ai/v1"),
        "apiVersion: unknown apiVersion 'modelplane.ai/v1'"),
    Bad("no kind", swap(GOOD, "kind: ModelDeployment\n", ""), "kind: kind is required; one of InferenceClass"),
    Bad("an unknown kind", swap(GOOD, "kind: ModelDeployment", "kind: Model"), "kind: unknown kind 'Model'"),
    Bad("no metadata", swap(GOOD, "metadata:\n  name: m\n  namespace: ml\n  labels: {team: a}\n", ""), "metadata: metadata is required"),
    Bad("metadata that is a list", swap(GOOD, "metadata:\n  name: m\n  namespace: ml\n  labels: {team: a}\n", "metadata: [m]\n"), "metadata: expected a mapping, got a list"),
    Bad("no name", swap(GOOD, "  name: m\n", ""), "metadata.name: name is required"),
    Bad("an uppercase name", swap(GOOD, "name: m\n", "name: Model\n"), "metadata.name: 'Model' is not a DNS label"),
    Bad("a name over 63 characters", swap(GOOD, "name: m\n", f"name: {'m' * 64}\n"), "is not a DNS label"),
    Bad("no spec", GOOD[: GOOD.index("spec:")], "spec: spec is required"),
    Bad("a spec that is a list", GOOD[: GOOD.index("spec:")] + "spec: [1]\n", "spec: expected a mapping, got a list"),
    Bad("no engines", swap(GOOD, "  engines:\n", "  engines: []\n  old:\n"), "spec.engines: needs at least 1 item(s); got 0"),
    Bad("engines that are a mapping", swap(GOOD, "  engines:\n  - name: e\n", "  engines:\n    name: e\n  x:\n  - name: e\n"), "spec.engines: expected a list, got a mapping"),
    Bad("an unknown top-level field", GOOD + "state: {}\n", "state: unknown field 'state'; allowed here: apiVersion, kind, metadata, spec, status"),
    Bad("an unknown spec field", swap(GOOD, "  replicas: 1\n", "  replica: 1\n"), "spec.replica: unknown field 'replica'; allowed here: clusterSelector, engines, modelCacheRef, replicas, serving, tolerations"),
    Bad("replicas as a string", swap(GOOD, "replicas: 1", "replicas: '1'"), "spec.replicas: expected an integer, got '1'"),
    Bad("replicas as a float", swap(GOOD, "replicas: 1", "replicas: 1.5"), "spec.replicas: expected an integer, got float 1.5"),
    Bad("replicas as a bool", swap(GOOD, "replicas: 1", "replicas: true"), "spec.replicas: expected an integer, got bool True"),
    Bad("replicas out of range", swap(GOOD, "replicas: 1", "replicas: -1"), "spec.replicas: must be at least 0; got int -1"),
    Bad("negative copies", swap(GOOD, "  - name: e\n", "  - name: e\n    copies: -2\n"), "spec.engines[0].copies: must be at least 1; got int -2"),
    Bad("a device count of zero", swap(GOOD, "count: 1", "count: 0"), "spec.engines[0].members[0].nodeSelector.devices[0].count: must be at least 1; got int 0"),
    Bad("a device count over 64", swap(GOOD, "count: 1", "count: 100"), "nodeSelector.devices[0].count: must be at most 64; got int 100"),
    Bad("no selectors", swap(GOOD, "          selectors:\n          - cel: device.driver == \"gpu.nvidia.com\"\n", "          selectors: []\n"), "devices[0].selectors: needs at least 1 item(s); got 0"),
    Bad("a selector without cel", swap(GOOD, "- cel: device.driver", "- expr: device.driver"), "selectors[0].expr: unknown field 'expr'; allowed here: cel"),
    Bad("an empty cel expression", swap(GOOD, 'cel: device.driver == "gpu.nvidia.com"', "cel: ''"), "selectors[0].cel: must not be empty"),
    Bad("a cel syntax error", swap(GOOD, '== "gpu.nvidia.com"', '== "gpu'), "selectors[0].cel: invalid CEL selector"),
    Bad("an undeclared cel function", swap(GOOD, 'device.driver == "gpu.nvidia.com"', 'gpus(device.driver) > 1'), "selectors[0].cel: invalid CEL selector"),
    Bad("a cel expression over 10 KiB", swap(GOOD, 'device.driver == "gpu.nvidia.com"', "device.driver == '" + "x" * 10300 + "'"), "selectors[0].cel: must be at most 10240 characters; got 10319"),
    Bad("an unknown role", swap(GOOD, "role: Standalone", "role: Boss"), "spec.engines[0].members[0].role: must be one of 'Standalone', 'Leader' or 'Worker'; got 'Boss'"),
    Bad("env with value and valueFrom", swap(GOOD, "{name: A, value: b}", "{name: A, value: b, valueFrom: {fieldRef: {fieldPath: status.podIP}}}"), "containers[0].env[0].valueFrom: set value or valueFrom, not both"),
    Bad("an invalid env name", swap(GOOD, "{name: A, value: b}", "{name: '1A', value: b}"), "containers[0].env[0].name: '1A' is not a valid environment variable name"),
    Bad("a duplicate YAML key", swap(GOOD, "  replicas: 1\n", "  replicas: 1\n  replicas: 2\n"), "duplicate key 'replicas' (first at line 8); a key may appear once in a mapping"),
    Bad("duplicate engine names", swap(GOOD, "  engines:\n", "  engines:\n  - name: e\n    members: [{nodeSelector: {devices: [{name: g, selectors: [{cel: 'true'}]}]}, template: {spec: {containers: [{name: engine, image: x}]}}}]\n"), "spec.engines[1].name: duplicate engine name 'e' (also at index 0); each engine name must be unique"),
    Bad("duplicate request names", swap(GOOD, "        devices:\n", "        devices:\n        - {name: gpu, selectors: [{cel: 'true'}]}\n"), "nodeSelector.devices[1].name: duplicate request name 'gpu'"),
    Bad("an invalid label value", swap(GOOD, "{team: a}", "{team: 'a b'}"), "metadata.labels: label team='a b' has an invalid value"),
    Bad("an invalid label key", swap(GOOD, "{team: a}", "{'te am': a}"), "metadata.labels: label key 'te am' is invalid"),
    Bad("an invalid namespace", swap(GOOD, "namespace: ml", "namespace: ML_team"), "metadata.namespace: 'ML_team' is not a DNS label"),
    Bad("an unknown cluster source", swap(CLUSTER, "source: Existing", "source: OpenShift"), "spec.cluster.source: must be one of 'GKE', 'EKS', 'AKS', 'Nebius', 'Vultr' or 'Existing'; got 'OpenShift'"),
    Bad("a negative nodeCount", swap(CLUSTER, "nodeCount: 1", "nodeCount: -1"), "spec.nodePools[0].nodeCount: must be at least 0; got int -1"),
    Bad("a pool name over 40 characters", swap(CLUSTER, "name: p,", f"name: {'p' * 41},"), "spec.nodePools[0].name: '" + "p" * 41 + "' is too long for a node pool name"),
    Bad("a class device count of zero", swap(CLASS, "    driver:", "    count: 0\n    driver:"), "spec.devices[0].count: must be at least 1; got int 0"),
    Bad("an attribute with two values", swap(CLASS, "{string: Hopper}", "{string: Hopper, int: 9}"), "spec.devices[0].attributes.architecture: an attribute sets exactly one of string, version, bool, int"),
    Bad("an invalid capacity quantity", swap(CLASS, "80Gi", "eighty"), "spec.devices[0].capacity.memory.value: 'eighty' is not a Kubernetes quantity"),
    Bad("an attribute name that CEL cannot read", swap(CLASS, "{architecture:", "{arch-name:"), "spec.devices[0].attributes.arch-name: 'arch-name' is not a valid attribute name"),
    Bad("a Hugging Face repo without an owner", swap(CACHE, "repo: org/model", "repo: model"), "spec.huggingFace.repo: 'model' is not a Hugging Face repository id"),
    Bad("a cache of zero GiB", swap(CACHE, "sizeGiB: 10", "sizeGiB: 0"), "spec.huggingFace.sizeGiB: must be at least 1; got int 0"),
    Bad("an unquoted date where a string belongs", swap(CACHE, "revision: main", "revision: 2024-01-01"), "spec.huggingFace.revision: expected a string, got date datetime.date(2024, 1, 1) (quote it to make it a string)"),
    Bad("a ModelEndpoint url without a scheme",
        "apiVersion: modelplane.ai/v1alpha1\nkind: ModelEndpoint\nmetadata: {name: x}\nspec: {url: api.example.com}\n",
        "spec.url: 'api.example.com' is not an http(s) URL"),
    Bad("a ModelService without endpoints",
        "apiVersion: modelplane.ai/v1alpha1\nkind: ModelService\nmetadata: {name: s}\nspec: {endpoints: []}\n",
        "spec.endpoints: needs at least 1 item(s); got 0"),
    Bad("an unknown toleration effect", swap(GOOD, "  replicas: 1\n", "  replicas: 1\n  tolerations: [{key: a, effect: PreferNoSchedule}]\n"), "spec.tolerations[0].effect: must be one of 'NoSchedule' or 'NoExecute'; got 'PreferNoSchedule'"),
    Bad("a document nested too deeply", "a: " + "[" * 3000 + "]" * 3000 + "\n", "nests deeper than 200 levels"),
    Bad("an alias bomb", "a: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join([f'*{chr(97 + i)}'] * 10)}]\n" for i in range(7)),
        "document expands to more than 1,000,000 values through YAML aliases"),
    Bad("an empty file", "", "contains no manifests", file_level=True),
    Bad("a file of comments only", "# nothing here\n---\n", "contains no manifests", file_level=True),
    Bad("a binary file", b"\x00\x01\x02binary", "is a binary file, not YAML text", file_level=True),
    Bad("a file that is not UTF-8", b"kind: caf\xe9\n", "is not UTF-8 text; save it as UTF-8"),
]


def test_there_are_at_least_forty_distinct_cases() -> None:
    assert len({case.name for case in CASES}) == len(CASES) >= 40


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_malformed_input_is_reported_cleanly(case: Bad, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "bad.yaml"
    if isinstance(case.content, bytes):
        path.write_bytes(case.content)
    else:
        path.write_text(case.content)
    assert main(["validate", str(path)]) == 1
    err = capsys.readouterr().err
    assert "Traceback" not in err
    lines = [line for line in err.splitlines() if case.want in line]
    assert lines, f"no line contains {case.want!r}:\n{err}"
    prefix = re.escape(str(path)) + ("(: |:1: )" if case.file_level else r":[1-9]\d*: ")
    assert re.match(prefix, lines[0]), lines[0]
    assert err.splitlines()[-1] == f"{sum(1 for l in err.splitlines() if ': warning: ' not in l) - 1} error(s) in the manifests"


def test_a_directory_without_manifests(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "notes.txt").write_text("hello")
    assert main(["validate", str(tmp_path)]) == 1
    assert f"{tmp_path}: directory holds no *.yaml or *.yml manifests" in capsys.readouterr().err


def test_a_path_that_does_not_exist(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", str(tmp_path / "nope.yaml")]) == 1
    assert f"{tmp_path / 'nope.yaml'}: no such file or directory" in capsys.readouterr().err
