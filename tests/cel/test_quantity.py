"""Kubernetes quantities: parsing, rejection and ordering, as apimachinery and the CEL library do.

Expected values come from Kubernetes: staging/src/k8s.io/apimachinery/pkg/api/resource/
quantity_test.go (its parse table and its "invalid" list), the examples and tests of
staging/src/k8s.io/apiserver/pkg/cel/library/quantity.go and quantity_test.go, and, where a row
says "traced", from following parseQuantityString/ParseQuantity in quantity.go by hand.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal

import pytest

from modelplane.cel import selector_matches
from modelplane.cel.quantity import (
    FORMAT_MESSAGE,
    NUMERIC_MESSAGE,
    SUFFIX_MESSAGE,
    QuantityError,
    parse_quantity,
    quantity_from_int,
)
from tests.cel.devices import Expression


@dataclass(frozen=True)
class Case:
    name: str
    text: str
    value: str  # exact decimal value after Kubernetes' rounding
    integer: int | None = None  # AsInt64, when Kubernetes keeps the int64 form and it converts


# quantity_test.go TestQuantityParse table, plus the CEL library examples.
VALUES = [
    Case("binary suffixes multiply by powers of 1024", "80Gi", "85899345920", 85899345920),
    Case("a device's published memory in Mi", "81559Mi", "85520809984", 85520809984),
    Case("decimal suffixes multiply by powers of 1000", "1.5G", "1500000000", 1500000000),
    Case("k is lower-case kilo", "200k", "200000", 200000),
    Case("m is milli and keeps three decimals", "1500m", "1.5"),
    Case("n and u are nano and micro", "5u", "0.000005"),
    Case("an exponent scales by powers of ten", "1e3", "1000", 1000),
    Case("an upper-case exponent too", "1E3", "1000", 1000),
    Case("a signed exponent", "1e+3", "1000", 1000),
    Case("a negative exponent", "12e-3", "0.012"),
    Case("E alone is exa, not an exponent", "1E", "1000000000000000000", 10**18),
    Case("a leading plus sign is allowed", "+12", "12", 12),
    Case("a leading minus sign is allowed", "-12Mi", "-12582912", -12582912),
    Case("leading zeros are ignored", "007", "7", 7),
    Case("a trailing dot is a whole number", "1.", "1", 1),
    Case("a leading dot is a fraction", ".001", "0.001"),
    Case("a dot before the suffix is allowed", "1.G", "1000000000", 1000000000),
    Case("fractions of a binary suffix are exact", "1.5Gi", "1610612736"),
    Case("values below a nano round up to one nano", "0.1n", "0.000000001"),
    Case("tiny binary fractions round up and stay positive", "0.000000000001Ki", "0.000000002"),
    Case("binary values above 2^63-1 are capped", "9Ei", str(2**63 - 1)),
    Case("the cap keeps the sign", "-8Ei", str(-(2**63 - 1))),
    Case("decimal values are not capped", "12E", "12000000000000000000"),
    Case("the CEL library's decimal example", "50.703k", "50703", 50703),
    # traced: the scanner stops on the first non-digit, so a suffix alone is the number 0.
    Case("a suffix without digits parses as zero (traced)", "Mi", "0", 0),
    Case("a lone sign parses as zero (traced)", "-", "0", 0),
    # traced: the int64 exponent is truncated to int32, so 2^32 becomes 0.
    Case("an exponent of 2^32 wraps to zero (traced)", "1e4294967296", "1", 1),
]


@pytest.mark.parametrize("case", VALUES, ids=lambda c: c.name)
def test_parse_value(case: Case) -> None:
    quantity = parse_quantity(case.text)
    assert quantity.amount == Decimal(case.value)
    assert quantity.as_int64() == case.integer


# quantity_test.go's invalid lists and the CEL library's documented errors.
REJECTED = [
    Case("an empty string", "", FORMAT_MESSAGE),
    Case("two dots", "1.1.M", FORMAT_MESSAGE),
    Case("a sign inside the number", "1+1.0M", FORMAT_MESSAGE),
    Case("lower-case mi", "0.1mi", SUFFIX_MESSAGE),
    Case("letters outside the suffix alphabet", "0.1am", FORMAT_MESSAGE),
    Case("a word", "aoeu", FORMAT_MESSAGE),
    Case("i alone is no suffix", "1i", SUFFIX_MESSAGE),
    Case("a fraction with i", "-3.01i", SUFFIX_MESSAGE),
    Case("an exponent without digits", "-3.01e-", SUFFIX_MESSAGE),
    Case("leading whitespace", " 1", FORMAT_MESSAGE),
    Case("trailing whitespace", "1 ", FORMAT_MESSAGE),
    Case("upper-case K (the library's 200K example)", "200K", SUFFIX_MESSAGE),
    Case("the library's regex example", "10Mo", FORMAT_MESSAGE),
    Case("the library's suffix example", "10Mm", SUFFIX_MESSAGE),
    Case("e alone", "1e", SUFFIX_MESSAGE),
    Case("a fractional exponent", "1e1.5", FORMAT_MESSAGE),
    Case("hexadecimal", "0x10", FORMAT_MESSAGE),
    Case("a unit after an exponent", "1e3k", FORMAT_MESSAGE),
    # traced: Ei and Pi alone take the decimal path, which needs a digit.
    Case("Ei without digits (traced)", "Ei", NUMERIC_MESSAGE),
]


@pytest.mark.parametrize("case", REJECTED, ids=lambda c: c.name)
def test_parse_rejects(case: Case) -> None:
    with pytest.raises(QuantityError) as raised:
        parse_quantity(case.text)
    assert str(raised.value) == case.value


@dataclass(frozen=True)
class Order:
    name: str
    left: str
    right: str
    want: int


# quantity_test.go and library/quantity.go compareTo examples; 80Gi vs 81559Mi is 81920Mi vs 81559Mi.
ORDER = [
    Order("80Gi is more than a device's 81559Mi", "80Gi", "81559Mi", 1),
    Order("80Gi equals 81920Mi", "80Gi", "81920Mi", 0),
    Order("200M equals 0.2G", "200M", "0.2G", 0),
    Order("50M is less than 50Mi", "50M", "50Mi", -1),
    Order("50Mi is more than 50M", "50Mi", "50M", 1),
    Order("1000m equals 1", "1000m", "1", 0),
    Order("1e3 equals 1k", "1e3", "1k", 0),
    Order("negative is less than zero", "-1m", "0", -1),
    Order("141Gi is more than 120Gi", "141Gi", "120Gi", 1),
    Order("a huge exponent compares without expanding", "1e2147483647", "9Ei", 1),
]


@pytest.mark.parametrize("case", ORDER, ids=lambda c: c.name)
def test_compare(case: Order) -> None:
    assert parse_quantity(case.left).compare(parse_quantity(case.right)) == case.want
    assert (parse_quantity(case.left) == parse_quantity(case.right)) is (case.want == 0)


# library/quantity.go doc examples and quantity_test.go cases, evaluated as selectors.
LIBRARY = [
    Expression("isQuantity accepts 1.3Gi", 'isQuantity("1.3Gi")', True),
    Expression("isQuantity refuses 1,3G", 'isQuantity("1,3G")', False),
    Expression("isQuantity refuses 200K", 'isQuantity("200K")', False),
    Expression("quantity equality is by value", 'quantity("200M") == quantity("0.2G")', True),
    Expression("isLessThan 50M < 50Mi", 'quantity("50M").isLessThan(quantity("50Mi"))', True),
    Expression("isGreaterThan is strict", 'quantity("50M").isGreaterThan(quantity("50M"))', False),
    Expression("add two quantities", 'quantity("50k").add(quantity("20")) == quantity("50.02k")', True),
    Expression("add an int", 'quantity("50k").add(20).isLessThan(quantity("50020"))', False),
    Expression("sub an int", 'quantity("50k").sub(20) == quantity("49980")', True),
    Expression("an arithmetic chain as an integer",
               'quantity("50k").add(20).sub(quantity("100k")).sub(-50000).asInteger() == 20', True),
    Expression("50000000G is an integer", 'quantity("50000000G").isInteger()', True),
    Expression("a value past int64 is not", 'quantity("9999999999999999999999999999999999999G").isInteger()', False),
    Expression("1000m is not an integer in Kubernetes' int64 form", 'quantity("1000m").isInteger()', False),
    Expression("asApproximateFloat", 'quantity("50.703k").asApproximateFloat() == 50703.0', True),
    # sign is a global function in quantityLibraryDecls (cel.Overload, not cel.MemberOverload).
    Expression("sign of a negative quantity", 'sign(quantity("-1m")) == -1', True),
    Expression("asInteger past int64 is an error, so no match",
               'quantity("9999999999999999999999999999999999999G").asInteger() == 0', False),
    Expression("an invalid literal is a runtime error, so no match", 'sign(quantity("40GB")) == 1', False),
]


@pytest.mark.parametrize("case", LIBRARY, ids=lambda c: c.name)
def test_library(case: Expression) -> None:
    assert selector_matches(case.cel, {"driver": "gpu.nvidia.com"}) is case.want


def test_add_keeps_the_int64_form_like_kubernetes() -> None:
    total = parse_quantity("50k").add(quantity_from_int(20)).sub(parse_quantity("100k"))
    assert total.int64 == (-49980, 0)
