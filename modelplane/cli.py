"""`modelplane`: validate manifests, plan the fleet offline (what changes, what if, what it costs),
explain a placement, suggest capacity; run it always-on.

Argument parsing and output only; every decision comes from `modelplane.api` and
`modelplane.scheduling`, the same functions the Pulumi program calls, so what `plan` prints is what
`pulumi preview` will do. `crds` and `control-plane --render` print what the control cluster runs
(`modelplane.api.crds`, `compose.control_plane`); `reconcile` is the one command that talks to a
cluster: it asks the Pulumi Kubernetes Operator to run the stack now. The process runs `run()`;
`main()` is the same commands for callers in a process that goes on (tests). Exit codes: 0 done (even when
a deployment is short: that is reported), 1 invalid input (manifests, state file, an unreachable
cluster, an output, --out or --render that cannot be written; a missing optional package, named with the extra
that installs it), 2 usage errors, 3 a deployment left short under
`plan --fail-on-short`. Heavy modules are imported per command so `modelplane --help` stays fast.
"""

from __future__ import annotations

import argparse
import gc
import os
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

import orjson

from modelplane import __version__
from modelplane.invariants import InvariantError
from modelplane.report.json_text import indented

if TYPE_CHECKING:
    from modelplane.api import Manifests
    from modelplane.scheduling import Placement


SHORT = 3
"""`plan --fail-on-short`'s exit code when a deployment cannot be fully placed."""

INTERRUPTED = 130
"""The exit code after Ctrl-C (128 + SIGINT, as shells report it)."""
RENDER_RECORD = "_inventory/rendered-files.txt"
"""Under `--render DIR`: the files the render wrote (a folder holding others is not replaced)."""

STRICT_HELP = "reject documents of other API groups (by default each is skipped with a warning)"
CONTROL_CLUSTER_HELP = ("validate as control-cluster mode does: an InferenceGateway without spec.cluster runs on the "
                        "control cluster (by default it is an error)")


class InputError(Exception):
    """Bad input the user must fix; the message is printed as is and the exit code is 1."""


def run() -> NoReturn:
    """The `modelplane` process: `main()`, then exit at once. What a command reads lives until the
    process ends, so the cyclic collector stays off (it would only rescan those objects: a third of a
    1,000-deployment plan), and the process exits without freeing them one by one (a plan holds
    millions; the operating system takes the memory back whole). Only this entry point touches
    process state: `main()` and the library functions it calls leave the collector as they find it."""
    gc.disable()
    code = main()
    sys.stdout.flush()  # every command writes through `_write`, which flushed and reported a failure
    sys.stderr.flush()
    os._exit(code)


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        return args.command(args)
    except InputError as error:
        from modelplane.api.problems import printable

        print(printable(str(error)), file=sys.stderr)
        return 1
    except InvariantError as error:
        print(f"modelplane: internal error, please report it: {error}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("modelplane: interrupted", file=sys.stderr)
        return INTERRUPTED
    except ModuleNotFoundError as error:
        from modelplane.io.extras import missing

        advice = missing(error, f"modelplane {args.command.__name__.lstrip('_').replace('_', '-')}")
        if advice is None:
            raise
        print(advice, file=sys.stderr)
        return 1


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="modelplane", description=(
        "Control plane for AI inference across a fleet of GPU Kubernetes clusters: "
        "validate manifests, plan where every replica runs, explain why."))
    parser.add_argument("--version", action="version", version=f"modelplane {__version__}")
    commands = parser.add_subparsers(required=True, metavar="COMMAND")

    validate = commands.add_parser("validate", help="load and validate manifests")
    validate.add_argument("paths", nargs="+", metavar="PATH", help="manifest files or directories")
    validate.add_argument("--strict", action="store_true", help=STRICT_HELP)
    validate.add_argument("--control-cluster", action="store_true", help=CONTROL_CLUSTER_HELP)
    validate.add_argument("--against-slices", action="append", default=[], metavar="[CLUSTER=]FILE", help=(
        "also warn where the classes (and the selectors planned on them) differ from the devices in FILE "
        "(`kubectl get nodes,resourceslices,deviceclasses -o yaml`); repeatable"))
    validate.add_argument("--kubeconfig", action="append", default=[], metavar="[CLUSTER=]KUBECONFIG", help=(
        "the same check against what a live cluster publishes; repeatable"))
    validate.set_defaults(command=_validate)

    classes = commands.add_parser("classes", help="print the InferenceClass devices block each pool's nodes "
                                                  "really publish, from ResourceSlices")
    source = classes.add_mutually_exclusive_group(required=True)
    source.add_argument("file", nargs="?", metavar="FILE",
                        help="`kubectl get nodes,resourceslices,deviceclasses -o yaml` output")
    source.add_argument("--kubeconfig", help="read the live cluster instead")
    classes.add_argument("--context", help="the kubeconfig context (default: the current one)")
    classes.set_defaults(command=_classes)

    plan = commands.add_parser("plan", help="place every replica and print where it runs")
    plan.add_argument("paths", nargs="+", metavar="PATH", help="manifest files or directories")
    plan.add_argument("--state", metavar="FILE", help="a previous `plan --format json` output to retain from")
    plan.add_argument("--format", choices=("table", "json", "markdown"), default="table")
    plan.add_argument("--out", metavar="FILE", help="write the result to FILE instead of standard output")
    plan.add_argument("--render", metavar="DIR", help="also write every cluster's Kubernetes manifests under DIR")
    plan.add_argument("--strict", action="store_true", help=STRICT_HELP)
    plan.add_argument("--control-cluster", action="store_true", help=CONTROL_CLUSTER_HELP)
    plan.add_argument("--fail-on-short", action="store_true", help=(
        f"exit with code {SHORT} when a deployment cannot be fully placed (for CI that must block such a change)"))
    plan.add_argument("--what-if", action="append", metavar="EDIT", dest="what_if", help=(
        "plan also with EDIT applied in memory (files are never changed) and print what changes; one quoted "
        "argument per edit, repeatable: 'pool CLUSTER/POOL nodes=N', 'pool CLUSTER/POOL class=CLASS nodes=N', "
        "'pool CLUSTER/POOL remove', 'drain CLUSTER', 'remove CLUSTER', 'replicas NAMESPACE/NAME=N'"))
    plan.set_defaults(command=_plan)

    explain = commands.add_parser("explain", help="say why a deployment is placed as it is")
    explain.add_argument("deployment", metavar="NAMESPACE/NAME")
    explain.add_argument("paths", nargs="+", metavar="PATH", help="manifest files or directories")
    explain.add_argument("--state", metavar="FILE", help="a previous `plan --format json` output to retain from")
    explain.add_argument("--control-cluster", action="store_true", help=CONTROL_CLUSTER_HELP)
    explain.set_defaults(command=_explain)

    capacity = commands.add_parser("capacity", help="suggest the smallest capacity changes that place every short "
                                                    "deployment, as --what-if edits")
    capacity.add_argument("paths", nargs="+", metavar="PATH", help="manifest files or directories")
    capacity.add_argument("--state", metavar="FILE", help="a previous `plan --format json` output to retain from")
    capacity.add_argument("--format", choices=("table", "json"), default="table")
    capacity.add_argument("--alternatives", metavar="N", type=_count, default=1,
                          help="how many changes to list per short deployment, best first (0: every one that works; "
                               "each one more costs plans); default 1")
    capacity.add_argument("--deployment", metavar="NAMESPACE/NAME", action="append", dest="only",
                          help="search only for this deployment (repeat for several; each builds on the changes "
                               "for those before it, in the scheduler's order); default every short deployment")
    capacity.set_defaults(command=_capacity)

    crds = commands.add_parser("crds", help="print the CustomResourceDefinitions of every modelplane.ai kind")
    crds.set_defaults(command=_crds)

    control = commands.add_parser("control-plane", help="write the control cluster's manifests (CRDs, access, the "
                                                        "operator's Stack, an example KEDA ScaledObject)")
    control.add_argument("--render", metavar="DIR", required=True, help="the directory to write them to")
    control.add_argument("--stack", default="fleet", help="the Pulumi stack the operator runs (default: fleet)")
    control.add_argument("--image", default="modelplane-workspace:0.1.0",
                         help="the workspace image built from the Dockerfile (default: modelplane-workspace:0.1.0)")
    control.add_argument("--backend", help="the Pulumi backend URL (s3://..., gs://...; default: Pulumi Cloud)")
    control.add_argument("--env", action="append", metavar="KEY", help="a key of the Secret modelplane-pulumi "
                         "the workspace gets as environment (repeat; default: PULUMI_ACCESS_TOKEN)")
    control.add_argument("--namespace", default="modelplane-system", help="the Stack's namespace")
    control.add_argument("--kubeconfig-secret", action="append", metavar="NAME", help="a Secret in the namespace "
                         "holding an Existing cluster's kubeconfig (existing.secretRef), the only Secrets the "
                         "workspace may read (repeat)")
    control.add_argument("--resync", type=int, default=60, metavar="SECONDS",
                         help="how often the operator re-runs the stack (at least 60, the default)")
    control.add_argument("--cluster", action="append", metavar="NAME", help="a workload cluster of the split "
                         "layout: its own Stack `<stack>-<NAME>`, and --stack becomes the fleet stack (repeat; "
                         "default: one stack for the whole fleet; docs/pulumi.md)")
    control.set_defaults(command=_control_plane)

    reconcile = commands.add_parser("reconcile", help="ask the Pulumi Kubernetes Operator to run the stack now")
    which = reconcile.add_mutually_exclusive_group()
    which.add_argument("--stack", default="fleet", help="the Pulumi stack (default: fleet)")
    which.add_argument("--all", action="store_true", help="every modelplane Stack in the namespace (the split "
                                                          "layout's fleet stack and workload stacks)")
    reconcile.add_argument("--namespace", default="modelplane-system", help="the Stack's namespace")
    reconcile.add_argument("--kubeconfig", help="the control cluster's kubeconfig (default: $KUBECONFIG or "
                                                "~/.kube/config)")
    reconcile.add_argument("--context", help="the kubeconfig context (default: the current one)")
    reconcile.set_defaults(command=_reconcile)
    return parser


def _validate(args: argparse.Namespace) -> int:
    from modelplane.compose import plan_warnings

    manifests = _load(args.paths, args.strict, args.control_cluster)
    for warning in plan_warnings(manifests):
        print(warning, file=sys.stderr)
    if args.against_slices or args.kubeconfig:
        from modelplane.io import published as published_cli

        checks = [(spec, "file") for spec in args.against_slices] + [(spec, "kubeconfig") for spec in args.kubeconfig]
        try:
            for spec, read in checks:
                for warning in published_cli.findings(manifests, *published_cli.against(manifests, spec, read)):
                    print(warning, file=sys.stderr)
        except published_cli.PublishedInputError as error:
            raise InputError(str(error)) from None
    counts = manifests.counts()
    kinds = ", ".join(f"{n} {kind}" for kind, n in counts.items())
    _write(f"ok: {sum(counts.values())} manifests ({kinds})\n")
    return 0


def _classes(args: argparse.Namespace) -> int:
    from modelplane.io import published as published_cli

    try:
        published = (published_cli.from_file(args.file) if args.file else
                     published_cli.from_cluster(args.kubeconfig, args.context))
    except published_cli.PublishedInputError as error:
        raise InputError(str(error)) from None
    _write(published_cli.classes_text(published))
    return 0


def _plan(args: argparse.Namespace) -> int:
    from modelplane.report import plan as report
    from modelplane.cel import SelectorEvaluator
    from modelplane.compose import plan_warnings
    from modelplane.scheduling import place
    from modelplane.scheduling.cost import placement_cost, priced
    from modelplane.scheduling.diff import diff

    manifests = _load(args.paths, args.strict, args.control_cluster)
    previous = _state(args.state)
    if args.what_if:
        return _what_if(args, manifests, previous)
    evaluator = SelectorEvaluator()
    placement = place(manifests.fleet, manifests.workloads, previous, evaluator=evaluator)
    changes = diff(previous, placement, manifests.fleet, manifests.fleet) if previous is not None else None
    cost = placement_cost(manifests.fleet, placement) if priced(manifests.fleet) else None
    cost_before = placement_cost(manifests.fleet, previous) if cost and previous else None
    if args.format == "json":
        document = placement.to_json() | ({"changes": changes.to_json()} if changes else {})
        text = indented(document)
    if args.render:
        _render(manifests, placement, Path(args.render))
    found = plan_warnings(manifests, placement, evaluator=evaluator)
    for warning in found:
        print(warning, file=sys.stderr)
    if args.format == "markdown":
        text = report.markdown(manifests.fleet, placement, changes, (*manifests.warnings, *found), cost=cost,
                               cost_before=cost_before)
    elif args.format == "table":
        text = report.table(manifests.fleet, placement, changes, cost, cost_before)
    _write(text, args.out)
    short = any(status.short for status in placement.deployments.values())
    return SHORT if args.fail_on_short and short else 0


def _what_if(args: argparse.Namespace, manifests: Manifests, previous: Placement | None) -> int:
    from modelplane.report import changes as changes_report
    from modelplane.report.cost import comparison
    from modelplane.scheduling.cost import placement_cost, priced
    from modelplane.scheduling.diff import diff
    from modelplane.scheduling.whatif import EditError, parse_edit
    from modelplane.scheduling.whatif_plan import before_and_after

    if args.render:
        print("modelplane plan: --render cannot be combined with --what-if", file=sys.stderr)
        return 2
    try:
        edits = [parse_edit(text) for text in args.what_if]
        before, after, fleet = before_and_after(manifests.fleet, manifests.workloads, edits, previous)
    except EditError as error:
        raise InputError(f"--what-if: {error}") from None
    changes = diff(before, after, manifests.fleet, fleet)
    cost = ""
    if priced(manifests.fleet) or priced(fleet):
        cost = comparison(placement_cost(manifests.fleet, before), placement_cost(fleet, after))
    if args.format == "json":
        document = {"before": before.to_json(), "after": after.to_json(), "changes": changes.to_json()}
        text = indented(document)
    elif args.format == "markdown":
        text = "\n".join(["### Modelplane what-if", "", "Edits: " + ", ".join(f"`{e}`" for e in edits), "",
                          *([cost, ""] if cost else []), *changes_report.markdown(changes)]) + "\n"
    else:
        text = f"WHAT-IF: {'; '.join(map(str, edits))}\n{changes_report.table(changes)}"
        text += f"\n{cost}\n" if cost else ""
    _write(text, args.out)
    short = any(status.short for status in after.deployments.values())
    return SHORT if args.fail_on_short and short else 0


def _explain(args: argparse.Namespace) -> int:
    from modelplane.scheduling import explain

    manifests = _load(args.paths, control_cluster=args.control_cluster)
    try:
        explanation = explain(manifests.fleet, manifests.workloads, args.deployment, _state(args.state))
    except KeyError:
        raise _undeclared(manifests, args.deployment) from None
    _write("\n".join(explanation.lines()) + "\n")
    return 0


def _undeclared(manifests: Manifests, key: str) -> InputError:
    declared = ", ".join(d.key for d in manifests.workloads.deployments) or "none"
    return InputError(f"no ModelDeployment {key!r} in the manifests (declared: {declared})")


def _count(text: str) -> int:
    if not text.isdigit():
        raise argparse.ArgumentTypeError(f"expected a whole number of 0 or more, got {text!r}")
    return int(text)


def _progress(doing: str, what: str) -> Callable[[int, int], None]:
    """A progress callback that says on stderr how far a long command is: nothing for its first two
    seconds, then at most once a second, and when it is done."""
    started = last = time.monotonic()

    def report(done: int, total: int) -> None:
        nonlocal last
        now = time.monotonic()
        if now - started >= 2 and (now - last >= 1 or done == total):
            last = now
            sys.stderr.write(f"{doing} {done}/{total} {what} ({now - started:.0f} s)\n")
            sys.stderr.flush()

    return report


def _capacity(args: argparse.Namespace) -> int:
    from modelplane.report import capacity as capacity_report
    from modelplane.scheduling.capacity import UnknownDeploymentError, suggest

    manifests = _load(args.paths)
    try:
        found = suggest(manifests.fleet, manifests.workloads, _state(args.state),
                        alternatives=args.alternatives or None,
                        progress=_progress("capacity: searched", "short deployment(s)"), only=args.only)
    except UnknownDeploymentError as error:
        raise _undeclared(manifests, error.args[0]) from None
    if args.format == "json":
        _write(indented(found.to_json()))
    else:
        _write(capacity_report.table(found, asked=args.only is not None))
    return 0


def _crds(_args: argparse.Namespace) -> int:
    from modelplane.api.crds import custom_resource_definitions
    from modelplane.compose.files import dump_all

    _write(dump_all(custom_resource_definitions()))
    return 0


def _control_plane(args: argparse.Namespace) -> int:
    from modelplane.compose.control_plane import ControlPlaneSettings, control_plane_files

    try:
        settings = ControlPlaneSettings(stack=args.stack, image=args.image, backend=args.backend,
                                        env_keys=tuple(args.env or ("PULUMI_ACCESS_TOKEN",)),
                                        namespace=args.namespace, resync_seconds=args.resync,
                                        kubeconfig_secrets=tuple(args.kubeconfig_secret or ()),
                                        clusters=tuple(args.cluster or ()))
    except ValueError as error:
        raise InputError(str(error)) from None
    directory = Path(args.render)
    files = control_plane_files(settings)
    _write_folder(directory, files, "--render")
    _write(f"wrote {', '.join(files)} to {directory}; once the Pulumi Kubernetes Operator runs, apply the numbered "
           f"files in order (docs/always-on.md)\n")
    return 0


def _reconcile(args: argparse.Namespace) -> int:
    from datetime import UTC, datetime

    from kubernetes import client
    from kubernetes.client.exceptions import ApiException
    from urllib3.exceptions import HTTPError

    from modelplane.compose.control_plane import PART_OF, RECONCILE_REQUEST, STACK_API, stack_resource
    from modelplane.io.kubeconfig import KubeconfigError, client_from_file

    namespace = args.namespace
    try:
        api = client_from_file(args.kubeconfig, args.context)
    except KubeconfigError as error:
        raise InputError(f"the kubeconfig {args.kubeconfig or '(default)'} {error}") from None
    requested = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    group, version = STACK_API.split("/")
    objects = client.CustomObjectsApi(api)
    names = [] if args.all else [stack_resource(args.stack)]
    try:
        if args.all:
            selector = ",".join(f"{key}={value}" for key, value in PART_OF.items())
            found = objects.list_namespaced_custom_object(group, version, namespace, "stacks", label_selector=selector)
            names = sorted(item["metadata"]["name"] for item in found["items"])
            if not names:
                raise InputError(f"no modelplane Stack in namespace {namespace} on {api.configuration.host} "
                                 "(`modelplane control-plane --render` writes them)")
        for name in names:
            objects.patch_namespaced_custom_object(group, version, namespace, "stacks", name,
                                                   {"metadata": {"annotations": {RECONCILE_REQUEST: requested}}})
    except ApiException as error:
        if error.status == 404 and args.all:
            raise InputError(f"{api.configuration.host} serves no {STACK_API} Stacks: the Pulumi Kubernetes "
                             "Operator is not installed") from None
        if error.status == 404:
            raise InputError(f"no Stack {namespace}/{names[0]} on {api.configuration.host} (the Stack of Pulumi "
                             f"stack {args.stack!r}; `modelplane control-plane --render` writes it)") from None
        raise InputError(f"{api.configuration.host} refused the request ({error.status} {error.reason})") from None
    except HTTPError as error:
        raise InputError(f"cannot reach {api.configuration.host}: {error}") from None
    for name in names:
        _write(f"requested a run of Stack {namespace}/{name} ({RECONCILE_REQUEST}={requested})\n")
    _write(f"follow {'them' if len(names) > 1 else 'it'} with: kubectl -n {namespace} get stack "
           f"{' '.join(names)} -w\n")
    return 0


def _load(paths: Sequence[str], strict: bool = False, control_cluster: bool = False) -> Manifests:
    from modelplane.api import ManifestErrors, load

    try:
        manifests = load(paths, strict=strict, control_cluster=control_cluster)
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
        data = orjson.loads(Path(path).read_bytes())
    except OSError as error:
        raise InputError(f"{path}: cannot read the state file: {error.strerror}") from None
    except orjson.JSONDecodeError as error:  # invalid UTF-8 included
        raise InputError(f"{path}: the state file is not JSON ({error}); pass a `plan --format json` output") from None
    try:
        return Placement.from_json(data)
    except StateError as error:
        raise InputError("\n".join(f"{path}: {problem}" for problem in error.problems)) from None


def _write(text: str, out: str | None = None) -> None:
    """The command's output, to `out` or to standard output (flushed): a failure is an InputError."""
    if out:
        try:
            Path(out).write_text(text)
        except OSError as error:
            raise InputError(f"--out {out}: cannot write the file: {error.strerror}") from None
    else:
        try:
            sys.stdout.write(text)
            sys.stdout.flush()
        except OSError as error:
            raise InputError(f"modelplane: cannot write the output: {error.strerror or error}") from None


def _render(manifests: Manifests, placement: Placement, directory: Path) -> None:
    """Write the rendered files as one folder (`atomic.write_folder`: whole, stale files gone). The
    render's warnings are `plan_warnings`'."""
    from modelplane.compose import render

    _write_folder(directory, render(manifests, placement).files(), "--render")


def _write_folder(directory: Path, files: dict[str, str], option: str) -> None:
    from modelplane.io.atomic import RenderError, write_folder

    try:
        write_folder(directory, files, RENDER_RECORD)
    except (RenderError, OSError) as error:
        reason = error if isinstance(error, RenderError) else f"cannot write {error.filename or directory}: " \
                                                               f"{error.strerror}"
        raise InputError(f"{option} {directory}: {reason}") from None


if __name__ == "__main__":
    run()
