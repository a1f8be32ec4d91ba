"""`modelplane`: validate manifests, plan the fleet offline, explain a placement.

Argument parsing and output only; every decision comes from `modelplane.api` and
`modelplane.scheduling`, the same functions the Pulumi program calls, so what `plan` prints is what
`pulumi preview` will do. Exit codes: 0 done (even when a deployment is short: that is reported),
1 invalid input (manifests, state file), 2 usage errors. Heavy modules are imported per command so
`modelplane --help` stays fast.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from modelplane.api import Manifests
    from modelplane.scheduling import Placement


STRICT_HELP = "reject documents of other API groups (by default each is skipped with a warning)"


class InputError(Exception):
    """Bad input the user must fix; the message is printed as is and the exit code is 1."""


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        return args.command(args)
    except InputError as error:
        print(error, file=sys.stderr)
        return 1


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="modelplane", description=(
        "Control plane for AI inference across a fleet of GPU Kubernetes clusters: "
        "validate manifests, plan where every replica runs, explain why."))
    commands = parser.add_subparsers(required=True, metavar="COMMAND")

    validate = commands.add_parser("validate", help="load and validate manifests")
    validate.add_argument("paths", nargs="+", metavar="PATH", help="manifest files or directories")
    validate.add_argument("--strict", action="store_true", help=STRICT_HELP)
    validate.set_defaults(command=_validate)

    plan = commands.add_parser("plan", help="place every replica and print where it runs")
    plan.add_argument("paths", nargs="+", metavar="PATH", help="manifest files or directories")
    plan.add_argument("--state", metavar="FILE", help="a previous `plan --format json` output to retain from")
    plan.add_argument("--format", choices=("table", "json", "markdown"), default="table")
    plan.add_argument("--out", metavar="FILE", help="write the result to FILE instead of standard output")
    plan.add_argument("--render", metavar="DIR", help="also write every cluster's Kubernetes manifests under DIR")
    plan.add_argument("--strict", action="store_true", help=STRICT_HELP)
    plan.set_defaults(command=_plan)

    explain = commands.add_parser("explain", help="say why a deployment is placed as it is")
    explain.add_argument("deployment", metavar="NAMESPACE/NAME")
    explain.add_argument("paths", nargs="+", metavar="PATH", help="manifest files or directories")
    explain.add_argument("--state", metavar="FILE", help="a previous `plan --format json` output to retain from")
    explain.set_defaults(command=_explain)

    crds = commands.add_parser("crds", help="print the CustomResourceDefinitions of every modelplane.ai kind")
    crds.set_defaults(command=_crds)
    return parser


def _validate(args: argparse.Namespace) -> int:
    manifests = _load(args.paths, args.strict)
    counts = manifests.counts()
    kinds = ", ".join(f"{n} {kind}" for kind, n in counts.items())
    print(f"ok: {sum(counts.values())} manifests ({kinds})")
    return 0


def _plan(args: argparse.Namespace) -> int:
    from modelplane import report
    from modelplane.scheduling import place

    manifests = _load(args.paths, args.strict)
    placement = place(manifests.fleet, manifests.workloads, _state(args.state))
    if args.format == "json":
        text = json.dumps(placement.to_json(), indent=2, sort_keys=True) + "\n"
    elif args.format == "markdown":
        text = report.markdown(manifests.fleet, placement)
    else:
        text = report.table(manifests.fleet, placement)
    if args.render:
        _render(manifests, placement, Path(args.render))
    else:
        from modelplane.compose import plan_warnings

        for warning in plan_warnings(manifests):
            print(warning, file=sys.stderr)
    if args.out:
        Path(args.out).write_text(text)
    else:
        sys.stdout.write(text)
    return 0


def _explain(args: argparse.Namespace) -> int:
    from modelplane.scheduling import explain

    manifests = _load(args.paths)
    try:
        explanation = explain(manifests.fleet, manifests.workloads, args.deployment, _state(args.state))
    except KeyError:
        declared = ", ".join(d.key for d in manifests.workloads.deployments) or "none"
        raise InputError(f"no ModelDeployment {args.deployment!r} in the manifests (declared: {declared})") from None
    print("\n".join(explanation.lines()))
    return 0


def _crds(_args: argparse.Namespace) -> int:
    from modelplane.api.crds import custom_resource_definitions
    from modelplane.compose.files import dump_all

    sys.stdout.write(dump_all(custom_resource_definitions()))
    return 0


def _load(paths: Sequence[str], strict: bool = False) -> Manifests:
    from modelplane.api import ManifestErrors, load

    try:
        manifests = load(paths, strict=strict)
    except ManifestErrors as errors:
        for problem in (*errors.warnings, *errors.errors):
            print(problem, file=sys.stderr)
        raise InputError(f"{len(errors.errors)} error(s) in the manifests") from None
    for warning in manifests.warnings:
        print(warning, file=sys.stderr)
    return manifests


def _state(path: str | None) -> Placement | None:
    if path is None:
        return None
    from modelplane.scheduling import Placement, StateError

    try:
        data = json.loads(Path(path).read_text())
    except OSError as error:
        raise InputError(f"{path}: cannot read the state file: {error.strerror}") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise InputError(f"{path}: the state file is not JSON ({error}); pass a `plan --format json` output") from None
    try:
        return Placement.from_json(data)
    except StateError as error:
        raise InputError("\n".join(f"{path}: {problem}" for problem in error.problems)) from None


def _render(manifests: Manifests, placement: Placement, directory: Path) -> None:
    from modelplane.compose import render

    rendered = render(manifests, placement)
    for warning in rendered.warnings:
        print(warning, file=sys.stderr)
    for relative, text in rendered.files().items():
        target = directory / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)


if __name__ == "__main__":
    sys.exit(main())
