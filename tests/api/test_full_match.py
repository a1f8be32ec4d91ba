"""Every pattern matches the whole string: Python's `re.match(r"^...$")` also accepts the text
followed by one `\\n` (`$` matches before a final newline), which let `qwen\\n` load as a second
deployment beside `qwen` and reach the API server, which refuses it halfway through `up`.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable
from pathlib import Path
from typing import Annotated

import pytest
from pydantic import Field, TypeAdapter, ValidationError

from modelplane.api import ManifestErrors, load_sources
from modelplane.api.base import check_dns1035_label, check_dns_label, check_dns_subdomain, check_labels
from modelplane.api.clouds import check_aks_pool_name, check_vke_version
from modelplane.api.fleet import check_attribute_name, check_currency, check_price
from modelplane.api.workload import check_env_name, check_hf_repo, check_url

PACKAGE = Path(__file__).resolve().parents[2] / "modelplane"

VALID: list[tuple[Callable[[str], object], str]] = [
    (check_dns_label, "qwen"), (check_dns1035_label, "qwen"), (check_dns_subdomain, "a.b"),
    (lambda v: check_labels({"team": v}), "a"), (lambda v: check_labels({v: "a"}), "example.com/team"),
    (check_env_name, "HF_TOKEN"), (check_hf_repo, "Qwen/Qwen3-8B"), (check_url, "https://api.example.com/v1"),
    (check_vke_version, "v1.36.1+3"), (check_aks_pool_name, "gpuh100"), (check_attribute_name, "nvidia.com/fp8"),
    (check_price, "3.67"), (check_currency, "USD"),
]


@pytest.mark.parametrize(("check", "value"), VALID)
def test_a_valid_value_with_a_trailing_newline_is_refused(check: Callable[[str], object], value: str) -> None:
    check(value)
    with pytest.raises(ValueError):
        check(value + "\n")


def test_pydantic_field_patterns_match_whole() -> None:
    """`Field(pattern=...)` runs on pydantic's Rust engine, where `$` is the end of the text."""
    adapter = TypeAdapter(Annotated[str, Field(pattern=r"^[a-z]+$")])
    adapter.validate_python("abc")
    with pytest.raises(ValidationError):
        adapter.validate_python("abc\n")
    assert not [path for path in PACKAGE.rglob("*.py") if "regex_engine" in path.read_text()]


def _anchored_patterns(tree: ast.Module) -> dict[str, str]:
    """Module-level `NAME = re.compile(r"...$")`."""
    found = {}
    for node in tree.body:
        if (isinstance(node, ast.Assign) and isinstance(node.value, ast.Call)
                and isinstance(node.value.func, ast.Attribute) and node.value.func.attr == "compile"
                and node.value.args and isinstance(node.value.args[0], (ast.Constant, ast.JoinedStr))):
            text = ast.unparse(node.value.args[0])
            if text.rstrip("'\"").endswith("$"):
                found.update({target.id: text for target in node.targets if isinstance(target, ast.Name)})
    return found


def test_no_anchored_pattern_is_used_with_match_or_search() -> None:
    """Every `$`-anchored pattern in the package is used with `fullmatch` (a source scan, so a new
    pattern cannot slip back)."""
    offenders = []
    for path in sorted(PACKAGE.rglob("*.py")):
        tree = ast.parse(path.read_text())
        anchored = _anchored_patterns(tree)
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and node.func.attr in ("match", "search")):
                continue
            receiver = node.func.value
            if isinstance(receiver, ast.Name) and receiver.id in anchored:
                offenders.append(f"{path.name}:{node.lineno}")
            elif (isinstance(receiver, ast.Name) and receiver.id == "re" and node.args
                  and isinstance(node.args[0], ast.Constant) and str(node.args[0].value).endswith("$")):
                offenders.append(f"{path.name}:{node.lineno}")
    assert offenders == []
    assert re.match(r"^a$", "a\n"), "the Python behaviour this guards against"


def test_a_name_with_a_trailing_newline_is_not_a_second_deployment() -> None:
    text = """\
apiVersion: modelplane.ai/v1alpha1
kind: ModelService
metadata: {name: "qwen\\n", namespace: ml}
spec:
  endpoints:
  - selector: {matchLabels: {a: b}}
"""
    with pytest.raises(ManifestErrors, match=r"metadata.name: 'qwen\\n' is not a DNS label"):
        load_sources([("s.yaml", text)])
