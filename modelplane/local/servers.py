"""Real Kubernetes API servers on loopback, for `make demo` (`modelplane.local.demo`) and the
end-to-end suite: one etcd, and per cluster a kube-apiserver (its own etcd prefix) and, when the
binary is there, a kube-controller-manager.

Contract:
- Every process listens on 127.0.0.1 only, on ports picked free at start; each start waits a
  bounded time for readiness (etcd /health, apiserver /readyz) and fails with the process's log
  tail. `Fleet.stop()` terminates everything (SIGTERM, then SIGKILL after a bound); the processes
  also get SIGTERM if the starting process dies (PR_SET_PDEATHSIG), so nothing outlives a run.
- Each cluster has a self-signed serving certificate (the apiserver writes it to its cert dir) and
  an admin bearer token that is random per run (so a test can look for it in Pulumi's state); its
  kubeconfig embeds the CA and the token. `Cluster.request` calls its API over that verified TLS
  connection; `apply_crds` posts CustomResourceDefinitions (server-side apply) and waits until
  they are Established, so neither needs kubectl.
- The controller manager runs the garbage collector and namespace controller, which `pulumi
  destroy` needs (the kubernetes provider deletes with foreground propagation).
- With `scheduler=True`, each cluster also runs a kube-scheduler (DRA is on by default in 1.34), and
  the controller manager runs without its node lifecycle controller: the nodes of such a fleet
  are API objects with no kubelet to renew their leases, which that controller would taint
  unreachable and evict.
- `Fleet.start_leaderworkerset(crds)` adds, per cluster, the LeaderWorkerSet controller (built from
  sigs.k8s.io/lws by e2e/build-tools.sh): its CRDs applied first, then the controller with its
  webhook server on 127.0.0.1 (a self-signed certificate per cluster) and the API server's webhook
  configurations pointing at that address by URL, as its own install registers them by Service.
  Its pod webhook labels the gang's pods; its pod controller creates each group's workers.
- `stop_apiserver`/`start_apiserver` take one cluster's API server away and bring it back on the
  same port with the same data (an unreachable cluster, for the end-to-end suite).
- Logs stay in the run's directory; `Fleet.logs()` names them.
"""

from __future__ import annotations

import base64
import ctypes
import json
import secrets
import signal
import socket
import ssl
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

READY_SECONDS = 60.0
REQUEST_SECONDS = 30.0
STOP_SECONDS = 10.0
_PR_SET_PDEATHSIG = 1


def _die_with_parent() -> None:
    ctypes.CDLL("libc.so.6", use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class ServerError(Exception):
    """A server did not start or answer in time; the message carries its log's tail."""


@dataclass
class Process:
    name: str
    popen: subprocess.Popen
    log: Path

    def tail(self, lines: int = 30) -> str:
        text = self.log.read_text(errors="replace").splitlines() if self.log.exists() else []
        return "\n".join(text[-lines:])

    def stop(self) -> None:
        if self.popen.poll() is not None:
            return
        self.popen.terminate()
        try:
            self.popen.wait(STOP_SECONDS)
        except subprocess.TimeoutExpired:
            self.popen.kill()
            self.popen.wait(STOP_SECONDS)


@dataclass
class Cluster:
    """One "existing cluster": an apiserver (+ controller manager) reachable by its kubeconfig."""

    name: str
    port: int
    token: str
    directory: Path

    @property
    def server(self) -> str:
        return f"https://127.0.0.1:{self.port}"

    @property
    def ca_file(self) -> Path:
        return self.directory / "certs" / "apiserver.crt"

    @property
    def kubeconfig_file(self) -> Path:
        return self.directory / "kubeconfig.yaml"

    def kubeconfig(self) -> str:
        ca = base64.b64encode(self.ca_file.read_bytes()).decode()
        return yaml.safe_dump({
            "apiVersion": "v1", "kind": "Config", "current-context": self.name,
            "clusters": [{"name": self.name, "cluster": {"server": self.server, "certificate-authority-data": ca}}],
            "users": [{"name": "admin", "user": {"token": self.token}}],
            "contexts": [{"name": self.name, "context": {"cluster": self.name, "user": "admin"}}]}, sort_keys=True)

    def request(self, method: str, path: str, body: bytes | None = None,
                content_type: str = "application/json") -> dict[str, Any]:
        """One call to the API as the admin; the answer's JSON. A 429 is retried after the wait the
        server asks for (`retry_after`), within REQUEST_SECONDS in all; any other HTTP error raises
        ServerError with its body."""
        context = ssl.create_default_context(cafile=str(self.ca_file))
        deadline = time.monotonic() + REQUEST_SECONDS
        while True:
            request = urllib.request.Request(f"{self.server}{path}", data=body, method=method, headers={
                "Authorization": f"Bearer {self.token}", "Accept": "application/json", "Content-Type": content_type})
            try:
                with urllib.request.urlopen(request, context=context, timeout=REQUEST_SECONDS) as response:
                    return json.load(response)
            except urllib.error.HTTPError as error:
                text = error.read()[:2000].decode(errors="replace")
                wait = retry_after(error.code, error.headers.get("Retry-After"))
                if wait is None or time.monotonic() + wait > deadline:
                    raise ServerError(f"{self.name}: {method} {path}: {error.code} {text}") from None
                time.sleep(wait)

    def ready(self) -> bool:
        """True once /readyz answers 200 to the admin over the verified TLS connection."""
        if not self.ca_file.exists():
            return False
        request = urllib.request.Request(f"{self.server}/readyz", headers={"Authorization": f"Bearer {self.token}"})
        try:
            context = ssl.create_default_context(cafile=str(self.ca_file))
            with urllib.request.urlopen(request, context=context, timeout=5) as response:
                return response.status == 200
        except (OSError, ssl.SSLError):  # not listening yet, a half-written certificate, or a 5xx
            return False


def retry_after(code: int, header: str | None) -> float | None:
    """How long to wait before asking again, or None when the answer is final. Only a 429 is
    retried: the API server refuses the request unprocessed, with a `Retry-After` in seconds, while
    the storage of a CustomResourceDefinition created a moment before is still initializing
    ("storage is (re)initializing": read back right after a fast `pulumi up`) or its flow control
    sheds load. A missing or unreadable header waits one second; a longer ask is capped at five."""
    if code != 429:
        return None
    try:
        seconds = float(header) if header else 1.0
    except ValueError:
        seconds = 1.0
    return min(max(seconds, 0.0), 5.0)


@dataclass
class Fleet:
    """etcd plus one apiserver (and controller manager) per cluster name, under `directory`."""

    tools: Mapping[str, Path]
    """Binary name -> its path: etcd and kube-apiserver, and kube-controller-manager if there is one."""
    directory: Path
    names: tuple[str, ...]
    clusters: dict[str, Cluster] = field(default_factory=dict)
    processes: list[Process] = field(default_factory=list)
    scheduler: bool = False

    def start(self) -> Fleet:
        try:
            etcd_url = self._etcd()
            keys = self._service_account_key()
            for name in self.names:
                self.clusters[name] = self._apiserver(name, etcd_url, keys)
                if "kube-controller-manager" in self.tools:
                    self._controller_manager(self.clusters[name], keys)
                if self.scheduler:
                    self._scheduler(self.clusters[name])
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        for process in reversed(self.processes):
            process.stop()

    def logs(self) -> str:
        return "\n".join(f"{p.name}: {p.log}" for p in self.processes)

    def stop_apiserver(self, name: str) -> None:
        """Stop one cluster's kube-apiserver: the cluster is unreachable (connection refused) until
        `start_apiserver`; its etcd data, port, certificates and token are kept."""
        self._apiserver_process(name).stop()

    def start_apiserver(self, name: str) -> None:
        """Start a stopped kube-apiserver again, as it was (same flags; a new log file), and wait until ready."""
        old = self._apiserver_process(name)
        if old.popen.poll() is None:
            raise ServerError(f"{old.name} is running")
        restarts = sum(p.name.startswith(f"{name}-apiserver") for p in self.processes)
        process = self._spawn(f"{name}-apiserver-{restarts}", [str(arg) for arg in old.popen.args])
        self._wait(process, self.clusters[name].ready, "ready")

    def _apiserver_process(self, name: str) -> Process:
        return [p for p in self.processes if p.name.startswith(f"{name}-apiserver")][-1]

    def _spawn(self, name: str, argv: list[str]) -> Process:
        log = self.directory / f"{name}.log"
        with log.open("wb") as out:
            popen = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                     preexec_fn=_die_with_parent)
        process = Process(name, popen, log)
        self.processes.append(process)
        return process

    def _wait(self, process: Process, ready: Callable[[], bool], what: str) -> None:
        deadline = time.monotonic() + READY_SECONDS
        while time.monotonic() < deadline:
            if process.popen.poll() is not None:
                raise ServerError(f"{process.name} exited with {process.popen.returncode} before {what}:\n"
                                  f"{process.tail()}")
            if ready():
                return
            time.sleep(0.2)
        raise ServerError(f"{process.name} not {what} after {READY_SECONDS:.0f} s:\n{process.tail()}")

    def _etcd(self) -> str:
        client, peer = free_port(), free_port()
        process = self._spawn("etcd", [
            str(self.tools["etcd"]), "--name", "e2e", "--data-dir", str(self.directory / "etcd"),
            "--listen-client-urls", f"http://127.0.0.1:{client}", "--advertise-client-urls", f"http://127.0.0.1:{client}",
            "--listen-peer-urls", f"http://127.0.0.1:{peer}", "--initial-advertise-peer-urls", f"http://127.0.0.1:{peer}",
            "--initial-cluster", f"e2e=http://127.0.0.1:{peer}", "--unsafe-no-fsync", "--log-level", "warn"])

        def healthy() -> bool:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{client}/health", timeout=2) as response:
                    return json.load(response).get("health") == "true"
            except (OSError, ValueError):
                return False

        self._wait(process, healthy, "healthy")
        return f"http://127.0.0.1:{client}"

    def _service_account_key(self) -> tuple[Path, Path]:
        private, public = self.directory / "sa.key", self.directory / "sa.pub"
        subprocess.run(["openssl", "genrsa", "-out", str(private), "2048"], check=True, capture_output=True)
        subprocess.run(["openssl", "rsa", "-in", str(private), "-pubout", "-out", str(public)], check=True,
                       capture_output=True)
        return private, public

    def _apiserver(self, name: str, etcd_url: str, keys: tuple[Path, Path]) -> Cluster:
        directory = self.directory / name
        (directory / "certs").mkdir(parents=True)
        cluster = Cluster(name, free_port(), secrets.token_hex(16), directory)
        tokens = directory / "tokens.csv"
        tokens.write_text(f"{cluster.token},e2e-admin,e2e-admin,system:masters\n")
        process = self._spawn(f"{name}-apiserver", [
            str(self.tools["kube-apiserver"]), f"--etcd-servers={etcd_url}", f"--etcd-prefix=/{name}",
            "--bind-address=127.0.0.1", "--advertise-address=127.0.0.1", f"--secure-port={cluster.port}",
            f"--cert-dir={directory / 'certs'}", f"--service-account-issuer=https://127.0.0.1:{cluster.port}",
            f"--service-account-key-file={keys[1]}", f"--service-account-signing-key-file={keys[0]}",
            "--service-cluster-ip-range=10.0.0.0/24", f"--token-auth-file={tokens}", "--authorization-mode=RBAC",
            "--endpoint-reconciler-type=none", "--enable-aggregator-routing=true", "--allow-privileged=true"])
        self._wait(process, cluster.ready, "ready")
        cluster.kubeconfig_file.write_text(cluster.kubeconfig())
        return cluster

    def _controller_manager(self, cluster: Cluster, keys: tuple[Path, Path]) -> None:
        self._spawn(f"{cluster.name}-controller-manager", [
            str(self.tools["kube-controller-manager"]), f"--kubeconfig={cluster.kubeconfig_file}",
            f"--authentication-kubeconfig={cluster.kubeconfig_file}",
            f"--authorization-kubeconfig={cluster.kubeconfig_file}", "--leader-elect=false",
            f"--service-account-private-key-file={keys[0]}", f"--root-ca-file={cluster.ca_file}",
            "--bind-address=127.0.0.1", "--secure-port=0", "--use-service-account-credentials=false",
            *(["--controllers=*,-node-lifecycle-controller"] if self.scheduler else [])])

    def _scheduler(self, cluster: Cluster) -> None:
        port = free_port()
        process = self._spawn(f"{cluster.name}-scheduler", [
            str(self.tools["kube-scheduler"]), f"--kubeconfig={cluster.kubeconfig_file}",
            f"--authentication-kubeconfig={cluster.kubeconfig_file}",
            f"--authorization-kubeconfig={cluster.kubeconfig_file}", "--leader-elect=false",
            "--bind-address=127.0.0.1", f"--secure-port={port}", f"--cert-dir={cluster.directory / 'scheduler-certs'}"])

        def healthy() -> bool:
            context = ssl.create_default_context()
            context.check_hostname, context.verify_mode = False, ssl.CERT_NONE  # its own self-signed certificate
            try:
                with urllib.request.urlopen(f"https://127.0.0.1:{port}/healthz", context=context, timeout=2) as answer:
                    return answer.status == 200
            except (OSError, ssl.SSLError):
                return False

        self._wait(process, healthy, "healthy")


    def start_leaderworkerset(self, crds: Sequence[Path]) -> None:
        """Per cluster: apply `crds` (the LeaderWorkerSet CRD and the DisaggregatedSet CRD its manager
        also watches), start the controller and register its webhooks once it is ready."""
        try:
            for cluster in self.clusters.values():
                apply_crds(cluster, crds)
                self._leaderworkerset(cluster)
        except BaseException:
            self.stop()
            raise

    def _leaderworkerset(self, cluster: Cluster) -> None:
        directory = cluster.directory / "leaderworkerset"
        (directory / "certs").mkdir(parents=True)
        subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj",
                        "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
                        "-keyout", str(directory / "certs" / "tls.key"), "-out", str(directory / "certs" / "tls.crt")],
                       check=True, capture_output=True)
        webhook, health, metrics = free_port(), free_port(), free_port()
        config = directory / "config.yaml"
        config.write_text(yaml.safe_dump({
            "apiVersion": "config.lws.x-k8s.io/v1alpha1", "kind": "Configuration",
            "leaderElection": {"leaderElect": False}, "internalCertManagement": {"enable": False},
            "webhook": {"host": "127.0.0.1", "port": webhook, "certDir": str(directory / "certs")},
            "health": {"healthProbeBindAddress": f"127.0.0.1:{health}"},
            "metrics": {"bindAddress": f"127.0.0.1:{metrics}"}}, sort_keys=True))
        process = self._spawn(f"{cluster.name}-leaderworkerset", [
            str(self.tools["lws-controller"]), f"--config={config}", f"--kubeconfig={cluster.kubeconfig_file}"])

        def ready() -> bool:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{health}/readyz", timeout=2) as answer:
                    return answer.status == 200
            except OSError:
                return False

        self._wait(process, ready, "ready")
        ca = base64.b64encode((directory / "certs" / "tls.crt").read_bytes()).decode()
        for kind, path, hooks in WEBHOOKS:
            cluster.request("POST", f"/apis/admissionregistration.k8s.io/v1/{path}", json.dumps({
                "apiVersion": "admissionregistration.k8s.io/v1", "kind": kind,
                "metadata": {"name": f"lws-{path}"},
                "webhooks": [{"name": name, "admissionReviewVersions": ["v1"], "sideEffects": "None",
                              "failurePolicy": "Fail", "rules": [rule],
                              **({"objectSelector": LWS_PODS} if rule is not LWS_RULE else {}),
                              "clientConfig": {"url": f"https://127.0.0.1:{webhook}{url}", "caBundle": ca}}
                             for name, url, rule in hooks]}).encode())


LWS_RULE = {"apiGroups": ["leaderworkerset.x-k8s.io"], "apiVersions": ["v1"], "operations": ["CREATE", "UPDATE"],
            "resources": ["leaderworkersets"]}
POD_RULE = {"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["pods"]}
LWS_PODS = {"matchExpressions": [{"key": "leaderworkerset.sigs.k8s.io/name", "operator": "Exists"}]}
WEBHOOKS = (
    ("MutatingWebhookConfiguration", "mutatingwebhookconfigurations", (
        ("mleaderworkerset.kb.io", "/mutate-leaderworkerset-x-k8s-io-v1-leaderworkerset", LWS_RULE),
        ("mpod.kb.io", "/mutate--v1-pod", POD_RULE))),
    ("ValidatingWebhookConfiguration", "validatingwebhookconfigurations", (
        ("vleaderworkerset.kb.io", "/validate-leaderworkerset-x-k8s-io-v1-leaderworkerset", LWS_RULE),
        ("vpod.kb.io", "/validate--v1-pod", {**POD_RULE, "operations": ["CREATE", "UPDATE"]}))),
)
"""The LeaderWorkerSet controller's webhooks (v0.9.0's kubebuilder markers: name, path, what they
admit, and the pod webhooks' object selector from its install), registered by URL on loopback."""

CRD_PATH = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"


def apply_crds(cluster: Cluster, files: Sequence[Path], field_manager: str = "modelplane-local") -> list[str]:
    """Server-side apply every CustomResourceDefinition in `files` (server-side: the largest are too
    big for client-side apply's annotation); return their names once all are Established."""
    names = []
    for path in files:
        for document in yaml.safe_load_all(path.read_text()):
            if not document or document.get("kind") != "CustomResourceDefinition":
                continue
            name = document["metadata"]["name"]
            cluster.request("PATCH", f"{CRD_PATH}/{name}?fieldManager={field_manager}&force=true",
                            json.dumps(document).encode(), "application/apply-patch+yaml")
            names.append(name)
    deadline = time.monotonic() + READY_SECONDS
    for name in names:
        while not _established(cluster.request("GET", f"{CRD_PATH}/{name}")):
            if time.monotonic() > deadline:
                raise ServerError(f"{cluster.name}: CustomResourceDefinition {name} not Established after "
                                  f"{READY_SECONDS:.0f} s")
            time.sleep(0.2)
    return names


def _established(crd: dict[str, Any]) -> bool:
    return any(c.get("type") == "Established" and c.get("status") == "True"
               for c in (crd.get("status") or {}).get("conditions") or [])  # null until the server fills it
