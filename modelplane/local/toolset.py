"""Where the local fleet's programs come from: `pulumi`, `kube-apiserver` and `etcd` on PATH when
all three are there, otherwise the pinned toolset `e2e/build-tools.sh` builds from Go modules once
(cached per user under ~/.cache/modelplane-e2e; later runs find it at once).

`Toolset.binaries` maps each server binary to its path (kube-controller-manager only when found:
the fleet runs without it); `Toolset.path` is what goes first on PATH for `pulumi` and its plugins;
`offline` says whether every plugin is in it (the built toolset) or Pulumi may fetch its own.
"""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from modelplane.local.project import CHECKOUT

REQUIRED = ("pulumi", "kube-apiserver", "etcd")
OPTIONAL = ("kube-controller-manager",)
BUILD_SCRIPT = CHECKOUT / "e2e" / "build-tools.sh"
BUILD_SECONDS = 3600
FIRST_BUILD = "about 15 minutes on 2 cores and 13 GB of Go caches, once"
"""The measured cold build (docs/e2e: five builds from the Go module proxy)."""


class ToolsetError(Exception):
    """The toolset could not be found or built; the message says why."""


@dataclass(frozen=True)
class Toolset:
    binaries: dict[str, Path]
    path: tuple[Path, ...]
    offline: bool
    origin: str
    """A sentence for the user: where the tools came from."""


def find_toolset(say=print) -> Toolset:
    """The tools on PATH if all of REQUIRED are there, else the built toolset (building it first if
    needed, saying how long a first build takes)."""
    found = {name: shutil.which(name) for name in (*REQUIRED, *OPTIONAL)}
    if all(found[name] for name in REQUIRED):
        binaries = {name: Path(where) for name, where in found.items() if where and name != "pulumi"}
        path = tuple(dict.fromkeys(Path(where).parent for where in found.values() if where))
        return Toolset(binaries, path, False, "pulumi, kube-apiserver and etcd from PATH")
    missing = ", ".join(name for name in REQUIRED if not found[name])
    say(f"{missing} not on PATH: using the pinned toolset e2e/build-tools.sh builds from Go modules "
        f"(the first build takes {FIRST_BUILD}; cached under ~/.cache/modelplane-e2e)")
    bin_dir = build_toolset()
    binaries = {name: bin_dir / name for name in ("etcd", "kube-apiserver", *OPTIONAL)}
    home = Path.home()
    where = f"~/{bin_dir.relative_to(home)}" if home in bin_dir.parents else str(bin_dir)
    return Toolset(binaries, (bin_dir,), True, f"the pinned toolset in {where}")


def build_toolset() -> Path:
    """The built toolset's bin directory: e2e/build-tools.sh builds what is not cached (its progress
    goes to standard error) and prints it."""
    try:
        built = subprocess.run([str(BUILD_SCRIPT), "--print-bin"], stdout=subprocess.PIPE, text=True,
                               timeout=BUILD_SECONDS)
    except subprocess.TimeoutExpired:
        raise ToolsetError(f"e2e/build-tools.sh did not finish in {BUILD_SECONDS} s") from None
    except OSError as error:
        raise ToolsetError(f"cannot run e2e/build-tools.sh: {error}") from None
    if built.returncode != 0:
        raise ToolsetError(f"e2e/build-tools.sh failed with exit code {built.returncode} (its messages are above)")
    return Path(built.stdout.strip().splitlines()[-1])
