"""The package's import graph holds its layout (issue 21), read from the source, not by importing it.

- Nothing loose at the package root but `__init__`, `__main__` and `cli`: the rest lives in a layer
  (`invariants`, `api`, `cel`, `scheduling`, `compose`, `report`, `io`, `pulumi`, `testing`, `local`).
- The layers import strictly downward: invariants (named checks every layer may use), then DESIGN's
  order: cel, api, scheduling, compose (the pure core), then report (text for people), io (reading
  clusters and files, writing folders), pulumi, testing (mocks for programs that use the
  components), local (the demo's local fleet), cli (the wiring). That also means no circle between
  them.
- No circle between modules either, imports inside functions included.
- No public name of a package's `__init__` shadows one of its modules (`import
  modelplane.scheduling.explain` once gave a function).

An edge is what an import statement names: `from P import X` is an edge to the module `P.X` when
there is one (Python binds the submodule), else to `P`; `import P.Q` an edge to `P.Q`.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "modelplane"
LAYERS = ("invariants", "cel", "api", "scheduling", "compose", "report", "io", "pulumi", "testing", "local", "cli",
          "__main__")
"""Bottom to top: each part may import only the parts before it."""
ROOT_MODULES = {"__init__.py", "__main__.py", "cli.py"}


def _name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_name(path): path for path in sorted(PACKAGE.rglob("*.py"))}


def _edges(module: str) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(MODULES[module].read_text())):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").startswith("modelplane"):
            assert node.module is not None
            submodules = {f"{node.module}.{alias.name}" for alias in node.names} & MODULES.keys()
            found |= submodules
            if len(submodules) < len(node.names):
                found.add(node.module)
        elif isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names if alias.name.startswith("modelplane")}
        elif isinstance(node, ast.ImportFrom) and node.level:
            pytest.fail(f"{MODULES[module]}: relative import; the package imports by absolute name")
    return found & MODULES.keys()


GRAPH = {module: _edges(module) for module in MODULES}


def _part(module: str) -> str:
    return module.split(".")[1] if "." in module else "__init__"


def test_only_the_cli_main_and_init_are_loose_at_the_package_root() -> None:
    loose = {path.name for path in PACKAGE.glob("*.py")}
    assert loose == ROOT_MODULES
    folders = {path.name for path in PACKAGE.iterdir() if path.is_dir() and (path / "__init__.py").exists()}
    assert folders == set(LAYERS) - {"cli", "__main__"}


@pytest.mark.parametrize("module", sorted(MODULES))
def test_a_module_imports_only_its_own_layer_and_those_below(module: str) -> None:
    part = _part(module)
    if part == "__init__":  # the package's own __init__ imports nothing of its layers
        assert GRAPH[module] == set()
        return
    below = set(LAYERS[:LAYERS.index(part) + 1])
    # the package's __init__ (its version) imports nothing of modelplane, so any part may read it
    upward = sorted(target for target in GRAPH[module] if target != "modelplane" and _part(target) not in below)
    assert upward == [], f"{module} imports a layer above its own ({part})"


def test_no_import_circle_between_modules() -> None:
    circles = []
    state: dict[str, int] = {}  # 1: on the current path, 2: done

    def visit(module: str, path: list[str]) -> None:
        state[module] = 1
        for target in sorted(GRAPH[module]):
            if state.get(target) == 1:
                circles.append([*path[path.index(target):], target])
            elif target not in state:
                visit(target, [*path, target])
        state[module] = 2

    for module in sorted(MODULES):
        if module not in state:
            visit(module, [module])
    assert circles == []


def test_the_graph_sees_imports_inside_functions() -> None:
    """The reader is not blind: cli imports report's plan inside a command, and plan imports the
    changes and cost reports it renders with."""
    assert "modelplane.report.plan" in GRAPH["modelplane.cli"]
    assert {"modelplane.report.changes", "modelplane.report.cost"} <= GRAPH["modelplane.report.plan"]


@pytest.mark.parametrize("package", sorted(name for name, path in MODULES.items() if path.name == "__init__.py"))
def test_no_public_name_of_a_package_shadows_its_module(package: str) -> None:
    children = {name.rpartition(".")[2] for name in MODULES if name.rpartition(".")[0] == package}
    bound: dict[str, str] = {}
    for node in ast.parse(MODULES[package].read_text()).body:
        if isinstance(node, ast.ImportFrom):
            for alias in node.names:
                target = f"{node.module}.{alias.name}"
                bound[alias.asname or alias.name] = target if target in MODULES else f"{target} (not a module)"
        elif isinstance(node, ast.Assign | ast.AnnAssign | ast.FunctionDef | ast.ClassDef):
            targets = node.targets if isinstance(node, ast.Assign) else [getattr(node, "target", node)]
            for target in targets:
                name = getattr(target, "id", getattr(target, "name", None))
                if name:
                    bound[name] = "a value"
    shadowing = {name: what for name, what in bound.items()
                 if name in children and not name.startswith("_") and what != f"{package}.{name}"}
    assert shadowing == {}
