"""The real Pulumi CLI running the real program (`__main__.py`) in a scratch project directory, for
`make demo` and the end-to-end suite.

`Project.create` copies `Pulumi.yaml` and `__main__.py` of the checkout into a directory next to a
link to the checkout's virtualenv, logs in to a `file://` backend inside that directory and creates
the stack, with a passphrase secrets provider. The environment keeps everything there:
PULUMI_HOME, the state and the stack config. With `offline=True` (the toolset built from Go
modules, which holds every plugin):
- plugins come from the toolset's bin directory on PATH (automatic acquisition is off);
- HTTP(S)_PROXY points at a closed loopback port (NO_PROXY covers 127.0.0.1), so any attempt to
  reach the network fails loudly instead of silently succeeding or hanging.
The language host of the toolset does not read Pulumi.yaml's `virtualenv` option, so the
virtualenv's bin comes first on PATH after the tools (its python runs the program).

Pulumi's automatic logs are off (`AUTOMATIC_LOGS_OFF`). Since 3.2xx every CLI command writes the
engine's verbose log, property values included, compressed and encrypted, to `$PULUMI_HOME/logs`
(pulumi/pulumi#23731), with no switch in 3.259 (pulumi/pulumi#22416 asks for one). It is the CLI's
largest cost here: measured with `go tool pprof` on `pulumi preview --profiling` of a fleet stack at
5,000 replicas, 45% of the CLI's CPU; back to back on 2 loaded cores, a workload stack of 50
replicas cycles (`up --refresh`, nothing changed) with 4.1 s of CLI CPU instead of 13.4-14.8 s and
creates with 23.2 s instead of 29.9-30.1 s, and the fleet stack's preview at 5,000 takes 4.8-4.9 s
instead of 8.8-13.2 s. The CLI starts the logs only when it can create that directory
(`pkg/logging/encrypted.go`, `StartLogging`; otherwise "automatic logging unavailable" and no log
handler is installed), so a file in its place turns them off; nothing else reads them. Delete the
file to get them back when debugging the engine.
Runs from a checkout (`CHECKOUT`): the program and the virtualenv are the checkout's.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from modelplane.local.servers import Cluster

CHECKOUT = Path(__file__).resolve().parents[2]
STACK = "e2e"
PASSPHRASE = "e2e-passphrase"
NS = "ml-team"
"""The namespace of the example fleets' workloads and of their `hf-token` Secret."""
COMMAND_SECONDS = 600
CLOSED_PORT_PROXY = "http://127.0.0.1:9"
HOME = ".pulumi-home"
"""The project's PULUMI_HOME, inside its directory."""
AUTOMATIC_LOGS_OFF = ("modelplane: a file here, where the Pulumi CLI would create its automatic logs' directory, keeps "
                      "them off (modelplane/local/project.py says why); delete it to turn them back on.\n")


class PulumiFailed(AssertionError):
    """A pulumi command exited non-zero; the message carries its output."""


def events(text: str) -> list[dict[str, Any]]:
    """Engine events from `--json` output: a stream of JSON objects, one per line or pretty-printed."""
    decoder, found, at = json.JSONDecoder(), [], 0
    while (at := _skip_space(text, at)) < len(text):
        event, at = decoder.raw_decode(text, at)
        found.append(event)
    return found


def engine_errors(stdout: str) -> str:
    """The errors the engine reported in a command's output: from `--json` output its error diagnostics,
    from text output its `Diagnostics:` section; "(none found)" otherwise."""
    try:
        parsed = events(stdout)
    except ValueError:
        start = stdout.find("Diagnostics:")
        return stdout[start:start + 12000] if start >= 0 else "(none found)"
    found = [diagnostic.get("message", "") for event in parsed
             for diagnostic in (*event.get("diagnostics", ()), event.get("diagnosticEvent") or {})
             if diagnostic.get("severity") == "error"]
    return "".join(found) or "(none found)"


def _skip_space(text: str, at: int) -> int:
    while at < len(text) and text[at].isspace():
        at += 1
    return at


@dataclass
class Project:
    directory: Path
    tools: tuple[Path, ...]
    """Directories searched first for `pulumi` and its plugins."""
    offline: bool = True
    stack: str = STACK

    @classmethod
    def create(cls, directory: Path, tools: Path | Sequence[Path], *, offline: bool = True,
               stack: str = STACK) -> Project:
        directory.mkdir(parents=True, exist_ok=True)
        for name in ("Pulumi.yaml", "__main__.py"):
            shutil.copy(CHECKOUT / name, directory / name)
        (directory / ".venv").symlink_to(CHECKOUT / ".venv")
        (directory / "stacks").mkdir()
        (directory / "state").mkdir()
        (directory / HOME).mkdir()
        (directory / HOME / "logs").write_text(AUTOMATIC_LOGS_OFF)
        project = cls(directory, (tools,) if isinstance(tools, Path) else tuple(tools), offline, stack)
        project.run("login", f"file://{directory / 'state'}")
        project.run("stack", "init", stack)
        return project

    @property
    def env(self) -> dict[str, str]:
        keep = {key: value for key, value in os.environ.items() if not key.startswith("PULUMI_")}
        path = os.pathsep.join([*map(str, self.tools), str(CHECKOUT / ".venv" / "bin"), os.environ.get("PATH", "")])
        env = {**keep, "PATH": path,
               "PULUMI_HOME": str(self.directory / HOME),
               "PULUMI_CONFIG_PASSPHRASE": PASSPHRASE,
               "PULUMI_SKIP_UPDATE_CHECK": "true",
               "PULUMI_SKIP_CONFIRMATIONS": "true"}
        if self.offline:
            env |= {"PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION": "true",
                    "HTTP_PROXY": CLOSED_PORT_PROXY, "HTTPS_PROXY": CLOSED_PORT_PROXY,
                    "http_proxy": CLOSED_PORT_PROXY, "https_proxy": CLOSED_PORT_PROXY,
                    "NO_PROXY": "127.0.0.1,localhost", "no_proxy": "127.0.0.1,localhost"}
        return env

    @property
    def pulumi(self) -> str:
        found = shutil.which("pulumi", path=self.env["PATH"])
        if found is None:
            raise PulumiFailed(f"no pulumi in {', '.join(map(str, self.tools))} or on PATH")
        return found

    def run(self, *args: str, check: bool = True, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
        done = subprocess.run([self.pulumi, *args, "--non-interactive"], cwd=self.directory,
                              env=self.env, input=stdin, capture_output=True, text=True, timeout=COMMAND_SECONDS)
        if check and done.returncode != 0:
            raise PulumiFailed(self.failure(args, done))
        return done

    def failure(self, args: tuple[str, ...], done: subprocess.CompletedProcess[str]) -> str:
        """What a failed command said: its whole output goes to a log file in the project directory;
        the message holds the engine's errors (the `Diagnostics:` section of text output, the error
        diagnostics of `--json` output) and the output's tails."""
        log = self.directory / f"failed-{time.time_ns()}.log"
        log.write_text(f"$ pulumi {' '.join(args)}\n--- stdout\n{done.stdout}\n--- stderr\n{done.stderr}")
        return (f"pulumi {' '.join(args)} exited {done.returncode} (whole output: {log})\n--- errors\n"
                f"{engine_errors(done.stdout)}\n--- stdout (end)\n{done.stdout[-6000:]}\n--- stderr (end)\n"
                f"{done.stderr[-6000:]}")

    def config(self, key: str, value: str, secret: bool = False, path: bool = False) -> None:
        flags = ["--secret" if secret else "--plaintext", *(["--path"] if path else [])]
        self.run("config", "set", *flags, key, value)

    def brownfield(self) -> None:
        """The stack switches every e2e stack uses: no serving-stack charts (they cannot be
        downloaded here; the suite installs the CRDs, as a brownfield cluster has them) and no
        readiness waits (there are no kubelets)."""
        self.config("modelplane:servingStack", "false")
        self.config("modelplane:skipAwait", "true")

    def deploy_to(self, clusters: dict[str, Cluster], manifests: dict[str, str], hf_token: str) -> None:
        """A brownfield stack of `manifests` onto `clusters` (a kubeconfig each), with the value of
        the `hf-token` Secret the fleet's engines read."""
        self.write_manifests(manifests)
        self.config("modelplane:manifests[0]", "manifests", path=True)
        self.brownfield()
        for name, cluster in clusters.items():
            self.config(f"modelplane:{name}Kubeconfig", cluster.kubeconfig(), secret=True)
        self.config(f"modelplane:secrets.{NS}.hf-token.HF_TOKEN", hf_token, secret=True, path=True)

    def read_from(self, control: Cluster) -> None:
        """Control-cluster mode: the program reads the modelplane.ai objects from `control`."""
        self.config("modelplane:source", "cluster")
        self.config("modelplane:controlKubeconfig", control.kubeconfig(), secret=True)

    def write_manifests(self, files: dict[str, str]) -> None:
        """Replace the stack's manifests (modelplane:manifests points at ./manifests)."""
        folder = self.directory / "manifests"
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir()
        for name, text in files.items():
            (folder / name).write_text(text)

    def preview(self, *flags: str, check: bool = True) -> tuple[dict[str, Any], subprocess.CompletedProcess[str]]:
        """`pulumi preview --json`: the engine's own account of the steps."""
        done = self.run("preview", "--json", *flags, check=check)
        return (json.loads(done.stdout) if done.stdout.strip().startswith("{") else {}), done

    def preview_diff(self, *flags: str) -> str:
        """`pulumi preview --diff` as a reviewer reads it: the engine's own text rendering, uncolored."""
        return self.run("preview", "--diff", "--color", "never", *flags).stdout

    def up(self, *flags: str) -> list[dict[str, Any]]:
        """`pulumi up --yes --json`: the engine's events, in the order it emitted them."""
        done = self.run("up", "--yes", "--skip-preview", "--json", *flags)
        (self.directory / f"up-{len(list(self.directory.glob('up-*.json')))}.json").write_text(done.stdout)
        return events(done.stdout)

    def outputs(self) -> dict[str, Any]:
        return json.loads(self.run("stack", "output", "--json", "--show-secrets").stdout)

    def export(self) -> str:
        return self.run("stack", "export").stdout
