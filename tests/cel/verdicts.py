"""Kubernetes' verdict on DRA device selectors, case by case, with the source each one follows.

A verdict is what the API server does with the selector in a ResourceClaim(Template) (rejected at
compile: admission refuses it) and, for an admitted one, what it evaluates to against the case's
device (true, false, or an error at run time, which is no match); ``accepted`` marks a case kept
for admission only. Sources: k8s.io/apiserver pkg/cel/library (quantity.go's
``quantityLibraryDecls``, semverlib.go, quantity_test.go, semver_test.go) and pkg/cel/environment
base.go (the options Kubernetes turns on), k8s.io/dynamic-resource-allocation cel/compile.go (the
device's types, the result rule), cel-go parser/parser.go, helper.go and gen/CEL.g4 (limits and
grammar), checker/cost.go (the estimate), and, where a row says so, what kube-apiserver 1.34.4
answered when the case was submitted (tests/e2e/test_cel_api_server.py submits every case again).

``CASES`` are cases modelplane agrees on; ``DIVERGENCES`` are the ones it does not, recorded with
both verdicts so that neither side changes unnoticed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from tests.cel.devices import H100


class Verdict(StrEnum):
    ACCEPTED = "accepted"
    REJECTED = "rejected at compile"
    ERROR = "error at run time"
    TRUE = "true"
    FALSE = "false"


@dataclass(frozen=True)
class Case:
    name: str
    cel: str
    kubernetes: Verdict
    source: str
    device: dict[str, Any] = field(default_factory=lambda: H100)

    @property
    def admitted(self) -> bool:
        return self.kubernetes is not Verdict.REJECTED


@dataclass(frozen=True)
class Divergence(Case):
    ours: Verdict = Verdict.REJECTED
    why: str = ""


QUANTITY = "apiserver pkg/cel/library/quantity.go quantityLibraryDecls"
QUANTITY_TEST = "apiserver pkg/cel/library/quantity_test.go"
SEMVER = "apiserver pkg/cel/library/semverlib.go declarations (SemverVersion(1), base.go from 1.33)"
SEMVER_TEST = "apiserver pkg/cel/library/semver_test.go"
PARSER = "cel-go parser/parser.go maxRecursionDepth 250: recursionListener"
VISITOR = "cel-go parser/parser.go maxRecursionDepth 250: checkAndIncrementRecursionDepth"
BASE = "apiserver pkg/cel/environment/base.go"
COMPILE = "dynamic-resource-allocation cel/compile.go CompileCELExpression"
COST = "cel-go checker/cost.go functionCost (Equals/NotEquals: the smaller operand size)"
SERVER = "kube-apiserver 1.34.4"
MEMORY = 'device.capacity["gpu.nvidia.com"].memory'
ARCH = 'device.attributes["gpu.nvidia.com"].architecture'
ATTRIBUTE = 'device.attributes["gpu.nvidia.com"].productName'
CAPABILITY = 'device.attributes["gpu.nvidia.com"].cudaComputeCapability'


def parens(depth: int, inner: str = 'device.driver == "gpu.nvidia.com"') -> str:
    return "(" * depth + inner + ")" * depth


def chain(op: str, terms: int, term: str = "true") -> str:
    return f" {op} ".join([term] * terms)


CASES = [
    # quantityLibraryDecls: which functions are global (cel.Overload) and which members (MemberOverload).
    Case("sign is a global function", f"sign({MEMORY}) == 1", Verdict.TRUE, f'{QUANTITY}["sign"]'),
    Case("sign is not a method", f"{MEMORY}.sign() == 1", Verdict.REJECTED, f'{QUANTITY}["sign"]'),
    Case("sign of a negative quantity", 'sign(quantity("-1m")) == -1', Verdict.TRUE, f"{QUANTITY} (sign's doc)"),
    Case("isQuantity is a global function", 'isQuantity("10Mm")', Verdict.FALSE,
         f'{QUANTITY_TEST} "isQuantity_passingRegex"'),
    Case("isQuantity is not a method", '"1".isQuantity()', Verdict.REJECTED, f'{QUANTITY}["isQuantity"]'),
    Case("quantity takes a string only", 'quantity(1) == quantity("1")', Verdict.REJECTED, f'{QUANTITY}["quantity"]'),
    Case("isQuantity takes a string only", "isQuantity(1)", Verdict.REJECTED, f'{QUANTITY}["isQuantity"]'),
    Case("an invalid suffix is a runtime error", 'quantity("10Mo") == quantity("10M")', Verdict.ERROR,
         f'{QUANTITY_TEST} "parseInvalidSuffix"'),
    Case("add and sub take a quantity or an int", 'quantity("50k").add(20).sub(quantity("100k")).sub(-50000)'
         '.asInteger() == 20', Verdict.TRUE, f'{QUANTITY_TEST} "arith_chain"'),
    Case("add takes no uint", 'quantity("1").add(1u) == quantity("2")', Verdict.REJECTED, f'{QUANTITY}["add"]'),
    Case("sub takes no double", 'quantity("1").sub(1.0) == quantity("0")', Verdict.REJECTED, f'{QUANTITY}["sub"]'),
    Case("asInteger past int64 is a runtime error", 'quantity("9999999999999999999999999999999999999G")'
         ".asInteger() == 0", Verdict.ERROR, f'{QUANTITY_TEST} "as_integer_error"'),
    Case("isInteger says so instead", 'quantity("9999999999999999999999999999999999999G").isInteger()',
         Verdict.FALSE, f'{QUANTITY_TEST} "is_integer"'),
    Case("asApproximateFloat", 'quantity("50.703k").asApproximateFloat() == 50703.0', Verdict.TRUE,
         f'{QUANTITY_TEST} "as_float"'),
    Case("compareTo compares quantities with quantities", f'{MEMORY}.compareTo(semver("1.0.0")) == 0',
         Verdict.REJECTED, f'{QUANTITY}["compareTo"]'),
    Case("81559Mi is less than 80Gi", f'{MEMORY}.compareTo(quantity("80Gi")) >= 0', Verdict.FALSE,
         f'{QUANTITY}["compareTo"] and apimachinery resource/suffix.go (Gi = 2^30)'),
    Case("an attribute may be the receiver of a quantity method",
         'device.attributes["gpu.nvidia.com"].index.isGreaterThan(quantity("1"))', Verdict.ERROR,
         f"{COMPILE} (attributes are any) and {QUANTITY}"),
    # The semver library at version 1: the normalize flag; major/minor/patch are members.
    Case("semver normalizes with true", 'semver("v01.01", true) == semver("1.1.0")', Verdict.TRUE,
         f"{SEMVER_TEST} (normalize)"),
    Case("isSemver without normalizing", 'isSemver("1.1")', Verdict.FALSE, f'{SEMVER_TEST} isSemver("1.1")'),
    Case("isSemver normalizing", 'isSemver("1.1", true)', Verdict.TRUE, f'{SEMVER_TEST} isSemver("1.1", true)'),
    Case("an invalid version is a runtime error", 'semver("v1.0") == semver("1.0.0")', Verdict.ERROR,
         f'{SEMVER_TEST} semver("v1.0")'),
    Case("patch is a method", 'semver("1.2.3").patch() == 3', Verdict.TRUE, f'{SEMVER_TEST} semver("1.2.3").patch()'),
    Case("major is not a function", 'major(semver("1.2.3")) == 1', Verdict.REJECTED, f'{SEMVER}["major"]'),
    Case("isSemver is not a method", '"1.0.0".isSemver()', Verdict.REJECTED, f'{SEMVER}["isSemver"]'),
    Case("a version attribute against a version", 'device.attributes["gpu.nvidia.com"].cudaComputeCapability'
         '.isGreaterThan(semver("8.9.0"))', Verdict.TRUE, f"{SEMVER} and {COMPILE} (version attributes)"),
    # cel-go's parser limits, as Kubernetes leaves them (the edges measured on the API server).
    Case("249 nested parentheses", parens(249, "true"), Verdict.TRUE, f"{PARSER}; {SERVER} accepts 249, rejects 250"),
    Case("250 nested parentheses", parens(250, "true"), Verdict.REJECTED, f"{PARSER}; {SERVER}"),
    Case("248 around a comparison", parens(248), Verdict.TRUE, f"{PARSER}; {SERVER}"),
    Case("249 around a comparison: its right operand enters relation once more", parens(249), Verdict.REJECTED,
         f"{PARSER}; {SERVER}"),
    Case("an && chain as long as 10 KiB allows", chain("&&", 1280), Verdict.TRUE,
         "cel-go parser/helper.go logicManager.balancedTree (no depth per term); " + SERVER),
    Case("a 10 KiB || chain of comparisons", chain("||", 425, 'device.driver == "x"') + ' || device.driver == '
         '"gpu.nvidia.com"', Verdict.TRUE, f"cel-go parser/helper.go logicManager.balancedTree; {SERVER}"),
    Case("a run of 4,000 negations is their parity", "!" * 4000 + "true", Verdict.TRUE,
         "cel-go parser/gen/CEL.g4 (ops+='!')+ member; parser.go VisitLogicalNot; " + SERVER),
    Case("an even run of negations is dropped, whatever the type", "!!1 == 1", Verdict.TRUE,
         f"cel-go parser.go VisitLogicalNot; {SERVER}"),
    Case("a run of ! and - cannot mix", '!-device.driver', Verdict.REJECTED, "cel-go parser/gen/CEL.g4 unary"),
    Case("249 additions and a comparison", chain("+", 250, "1") + " > 0", Verdict.ACCEPTED, f"{VISITOR}; {SERVER}"),
    Case("250 additions and a comparison", chain("+", 251, "1") + " > 0", Verdict.REJECTED, f"{VISITOR}; {SERVER}"),
    Case("a right operand enters relation again", "true == (" * 124 + "true" + ")" * 124, Verdict.TRUE,
         f"{PARSER}; {SERVER} accepts 124 levels, rejects 125"),
    Case("a right operand enters relation again, past the limit", "true == (" * 125 + "true" + ")" * 125,
         Verdict.REJECTED, f"{PARSER}; {SERVER}"),
    Case("* inside + enters calc twice per level", "1 + 2 * (" * 84 + "1" + ")" * 84 + " > 0", Verdict.REJECTED,
         f"{PARSER}; {SERVER} accepts 83 levels"),
    Case("249 nested else-branches", "true ? true : " * 249 + "false", Verdict.TRUE, f"{PARSER}; {SERVER}"),
    Case("250 nested else-branches", "true ? true : " * 250 + "false", Verdict.REJECTED, f"{PARSER}; {SERVER}"),
    Case("247 selections on an attribute", 'device.attributes["a"]' + ".b" * 247 + " == 1", Verdict.ACCEPTED,
         f"{VISITOR}; {SERVER}"),
    Case("248 selections on an attribute", 'device.attributes["a"]' + ".b" * 248 + " == 1", Verdict.REJECTED,
         f"{VISITOR}; {SERVER}"),
    Case("a number needs a digit after its point", "1. == 1.0", Verdict.REJECTED, "cel-go parser/gen/CEL.g4 NUM_FLOAT"),
    Case("a leading point is a number", ".5 == 0.5", Verdict.TRUE, "cel-go parser/gen/CEL.g4 NUM_FLOAT"),
    # ValidateRegexLiterals (base.go, 1.29+): a literal pattern of matches must compile as Go's regexp.
    Case("an unclosed class", 'device.driver.matches("[")', Verdict.REJECTED, f"{BASE} ValidateRegexLiterals"),
    Case("the global form too", 'matches(device.driver, "(a")', Verdict.REJECTED,
         f"{BASE} (the planner compiles it); {SERVER}"),
    Case("lookahead is not RE2", 'device.driver.matches("(?=x)")', Verdict.REJECTED, f"{BASE}; Go regexp/syntax"),
    Case("\\C is not Go", 'device.driver.matches("\\\\C")', Verdict.REJECTED, f"Go regexp/syntax; {SERVER}"),
    Case("\\Z is not RE2", 'device.driver.matches("\\\\Z")', Verdict.REJECTED, f"Go regexp/syntax; {SERVER}"),
    Case("at most 1000 repetitions", 'device.driver.matches("a{1001}")', Verdict.REJECTED,
         f"Go regexp/syntax; {SERVER}"),
    Case("named groups both ways", 'device.driver.matches("(?<n>gpu)(?P<m>[.])")', Verdict.TRUE,
         f"Go regexp/syntax; {SERVER}"),
    Case("POSIX classes and Unicode classes", f'{ARCH}.matches("^[[:alpha:]]+$") && {ARCH}.matches("\\\\pL")',
         Verdict.TRUE, f"Go regexp/syntax; {SERVER}"),
    Case("a pattern built at run time is compiled at run time", 'device.driver.matches(device.driver + "[")',
         Verdict.ERROR, "cel-go ext regex: an invalid pattern is an evaluation error"),
    # The checker's types, as Kubernetes configures them.
    Case("an attribute may be the result (the unknown type)", 'device.attributes["nvidia.com"].fp8', Verdict.TRUE,
         f"{COMPILE}: bool or the attribute type"),
    Case("a field of an attribute is dyn, not a result", 'device.attributes["a"].b.c', Verdict.REJECTED,
         f"{COMPILE}; {SERVER}: not dyn"),
    Case("dyn() is not a result", "dyn(true)", Verdict.REJECTED, f"{COMPILE}; {SERVER}: not dyn"),
    Case("a capacity is not a result", MEMORY, Verdict.REJECTED, f"{COMPILE}: not kubernetes.Quantity"),
    Case("an attribute is no comprehension range", 'device.attributes["a"].b.exists(x, x)', Verdict.REJECTED,
         f"{SERVER}: expression of type 'any' cannot be range of a comprehension"),
    Case("a domain's map is a comprehension range", 'device.attributes["gpu.nvidia.com"].exists(k, k == "index")',
         Verdict.TRUE, f"{COMPILE} (map(string, any))"),
    Case("list literals are homogeneous", '[1, "a"][0] == 1', Verdict.REJECTED, f"{BASE} HomogeneousAggregateLiterals"),
    Case("dyn does not make a list heterogeneous", "[1, dyn(2)][0] == 1", Verdict.REJECTED, f"{BASE}; {SERVER}"),
    Case("an attribute and an int differ too", 'size([device.attributes["a"].b, 1]) == 2', Verdict.REJECTED,
         f"{BASE}; {SERVER}: expected type 'any' but found 'int'"),
    Case("an empty list unifies", "[[1], []][0] == [1]", Verdict.TRUE, f"{BASE}; {SERVER}"),
    Case("map values are homogeneous", '{"a": 1, "b": "x"}["a"] == 1', Verdict.REJECTED, f"{BASE}; {SERVER}"),
    Case("equality needs assignable types", "1 == 1u", Verdict.REJECTED, "cel-go checker; " + SERVER),
    Case("ordering crosses numeric types", "1 < 2u", Verdict.TRUE, f"{BASE} CrossTypeNumericComparisons"),
    Case("a quantity may be compared with null", 'quantity("1") == null', Verdict.FALSE, f"{SERVER} (object types)"),
    Case("a string may not", '"a" == null', Verdict.REJECTED, f"cel-go checker; {SERVER}"),
    Case("ternary branches must agree", "(true ? null : 1) == 1", Verdict.REJECTED, f"cel-go checker; {SERVER}"),
    Case("bool() of a string", 'bool("true")', Verdict.TRUE, "cel-go standard library; " + SERVER),
    Case("string() of a bool", 'string(true) == "true"', Verdict.TRUE, "cel-go standard library; " + SERVER),
    Case("bytes() of a string", 'bytes("a") == b"a"', Verdict.TRUE, "cel-go standard library; " + SERVER),
    # The cost estimate: comparing two values of no known size is unbounded.
    Case("!= between two quantities", f'{MEMORY} != quantity("80Gi")', Verdict.REJECTED, f"{COST}; {SERVER}"),
    Case("== between two quantities is priced at 1", f'{MEMORY} == quantity("81559Mi")', Verdict.TRUE,
         "apiserver pkg/cel/library/cost.go EstimateCallCost _==_; " + SERVER),
    Case("== between two string() results", "string(1) == string(2)", Verdict.REJECTED, f"{COST}; {SERVER}"),
    Case("an attribute has a size", f'{ATTRIBUTE} != {ARCH}', Verdict.ERROR,
         f"{COST}; {COMPILE} (DeviceAttributeMaxValueLength); {SERVER}"),
    Case("a literal gives the comparison a size", 'device.attributes["a"].b.c != 1', Verdict.ACCEPTED,
         f"{COST}; {SERVER}"),
    # Every operator on quantities and semvers (Quantity and Semver implement Equal; the library
    # declares compareTo, isGreaterThan, isLessThan; ordering operators are not declared for them).
    Case("== between quantities of different value", f'{MEMORY} == quantity("80Gi")', Verdict.FALSE,
         "apiserver pkg/cel/library/cost.go EstimateCallCost _==_ (Quantity: 1)"),
    Case("== compares values, not spellings", f'{MEMORY} == quantity("85520809984")', Verdict.TRUE,
         f"{QUANTITY} (Quantity.Equal is Cmp == 0)"),
    Case("inequality of quantities, written as a negated ==", f'!({MEMORY} == quantity("80Gi"))', Verdict.TRUE,
         f"{COST}: != has no O(1) price, == has"),
    Case("isGreaterThan", f'{MEMORY}.isGreaterThan(quantity("80Gi"))', Verdict.FALSE, f'{QUANTITY}["isGreaterThan"]'),
    Case("isLessThan", f'{MEMORY}.isLessThan(quantity("80Gi"))', Verdict.TRUE, f'{QUANTITY}["isLessThan"]'),
    Case("compareTo below", f'{MEMORY}.compareTo(quantity("80Gi")) < 0', Verdict.TRUE, f'{QUANTITY}["compareTo"]'),
    Case("compareTo equal across suffixes", f'{MEMORY}.compareTo(quantity("85520809984")) == 0', Verdict.TRUE,
         f'{QUANTITY}["compareTo"]'),
    Case("< is not declared for quantities", f'{MEMORY} < quantity("80Gi")', Verdict.REJECTED,
         f"{QUANTITY} (no ordering overloads)"),
    Case("a version attribute == a semver", f'{CAPABILITY} == semver("9.0.0")', Verdict.TRUE,
         f"{COMPILE} (version attributes are Semver); {SEMVER}"),
    Case("== between semvers is value equality", f'{CAPABILITY} == semver("9.0.1")', Verdict.FALSE, SEMVER),
    Case("a version attribute != a semver (the attribute has a size)", f'{CAPABILITY} != semver("8.9.0")',
         Verdict.TRUE, f"{COST}; {COMPILE} DeviceAttributeMaxValueLength"),
    Case("== between two semver() results is priced at 1", 'semver("1.2.3") == semver("1.2.3")', Verdict.TRUE,
         "apiserver pkg/cel/library/cost.go EstimateCallCost _==_ (Semver: 1)"),
    Case("!= between two semver() results", 'semver("1.2.3") != semver("1.2.4")', Verdict.REJECTED, COST),
    Case("semver isLessThan", f'{CAPABILITY}.isLessThan(semver("9.0.0"))', Verdict.FALSE, f'{SEMVER}["isLessThan"]'),
    Case("semver compareTo", f'{CAPABILITY}.compareTo(semver("8.9.0")) > 0', Verdict.TRUE, f'{SEMVER}["compareTo"]'),
    Case("semver major and minor", f'{CAPABILITY}.major() == 9 && {CAPABILITY}.minor() == 0', Verdict.TRUE,
         f'{SEMVER}["major"], ["minor"]'),
    Case(">= is not declared for semvers", 'semver("1.0.0") >= semver("0.9.0")', Verdict.REJECTED,
         f"{SEMVER} (no ordering overloads)"),
]


DIVERGENCES = [
    Divergence("Kubernetes' string extension", 'device.driver.lowerAscii() == "gpu.nvidia.com"', Verdict.TRUE,
               f"{BASE} ext.Strings(2)", why="not declared here: rejected with undeclared reference"),
    Divergence("Kubernetes' list library", "[1, 2].sum() == 3", Verdict.TRUE, f"{BASE} library.Lists",
               why="not declared here"),
    Divergence("the regex library", '"gpu.nvidia.com".find("[a-z]+") == "gpu"', Verdict.TRUE, f"{BASE} library.Regex",
               why="not declared here"),
    Divergence("sets", "sets.contains([1, 2], [1])", Verdict.TRUE, f"{BASE} ext.Sets", why="not declared here"),
    Divergence("cel.bind", 'cel.bind(d, device.attributes["gpu.nvidia.com"], d.architecture == "Hopper")',
               Verdict.TRUE, "dynamic-resource-allocation cel/compile.go ext.Bindings", why="not declared here"),
    Divergence("optional types", 'device.attributes["gpu.nvidia.com"][?"index"].hasValue()', Verdict.TRUE,
               f"{BASE} cel.OptionalTypes", why="the grammar here has no optional syntax"),
    Divergence("two-variable comprehensions", "[1, 2].all(i, v, v > 0)", Verdict.TRUE,
               f"{BASE} ext.TwoVarComprehensions", why="not declared here"),
    Divergence("timestamps", 'timestamp("2024-01-01T00:00:00Z") > timestamp("2023-01-01T00:00:00Z")', Verdict.TRUE,
               "cel-go standard library", why="not declared here"),
    Divergence("deep arithmetic outside the fast path", chain("+", 120, "1") + " > 0", Verdict.TRUE,
               f"{VISITOR} (admitted)", ours=Verdict.ERROR,
               why="cel-python recurses per operator: deeper than reference.MAX_LEVELS, it is not run"),
]
