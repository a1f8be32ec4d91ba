"""Fixtures of the end-to-end suite: the toolset built from Go modules, real API servers, CRDs.

Every test under tests/e2e carries the `e2e` marker, which `make test` deselects and `make e2e`
selects. A toolset that cannot be built fails the suite (`pytest.fail`), it never skips.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from kubernetes import client, config

from modelplane.local.servers import Cluster, Fleet, apply_crds
from modelplane.local.toolset import ToolsetError, build_toolset

ROOT = Path(__file__).resolve().parents[2]
CRDS = ROOT / "tests" / "data" / "crds"
CLUSTERS = ("east", "west")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    here = Path(__file__).parent
    for item in items:
        if here in Path(item.fspath).parents:
            item.add_marker(pytest.mark.e2e)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo) -> Iterator[None]:
    """A failing e2e test's report ends with where the servers' logs are and their last lines."""
    outcome = yield
    report = outcome.get_result()
    running = getattr(item, "funcargs", {}).get("fleet")
    if report.failed and isinstance(running, Fleet):
        tails = "\n\n".join(f"--- {p.name} ({p.log})\n{p.tail(15)}" for p in running.processes)
        report.sections.append(("server logs", tails))


@pytest.fixture(scope="session")
def tools() -> Path:
    """The toolset's bin directory (built by e2e/build-tools.sh on first use, cached per user)."""
    try:
        return build_toolset()
    except ToolsetError as error:
        pytest.fail(str(error))


@pytest.fixture(scope="module")
def fleet(tools: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Fleet]:
    """etcd, and per cluster an apiserver + controller manager, with the CRDs our workloads use;
    fresh for each test module, so no module sees another's objects."""
    running = Fleet(binaries(tools), tmp_path_factory.mktemp("servers"), CLUSTERS).start()
    try:
        for cluster in running.clusters.values():
            install_crds(cluster)
        yield running
    finally:
        running.stop()


def kubectl(tools: Path, cluster: Cluster, *args: str, stdin: str | None = None,
            check: bool = True) -> subprocess.CompletedProcess[str]:
    """kubectl (built with the apiserver) against `cluster`, bounded in time."""
    done = subprocess.run([str(tools / "kubectl"), f"--kubeconfig={cluster.kubeconfig_file}", *args],
                          input=stdin, capture_output=True, text=True, timeout=120,
                          env={**os.environ, "KUBECACHEDIR": str(cluster.directory / "kubecache")})
    if check and done.returncode != 0:
        raise AssertionError(f"kubectl {' '.join(args)} failed ({done.returncode}):\n{done.stderr}")
    return done


def binaries(tools: Path) -> dict[str, Path]:
    """The servers' binaries in the toolset's bin directory."""
    return {name: tools / name for name in ("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler",
                                            "lws-controller")}


def install_crds(cluster: Cluster) -> None:
    """The published CRDs of tests/data/crds (LWS, Gateway API, Inference Extension, Envoy Backend, ...),
    applied server-side and Established."""
    apply_crds(cluster, sorted(CRDS.glob("*.yaml")))


def api_client(cluster: Cluster) -> client.ApiClient:
    """The official Python client for `cluster`, from its kubeconfig."""
    return config.new_client_from_config(config_file=str(cluster.kubeconfig_file))
