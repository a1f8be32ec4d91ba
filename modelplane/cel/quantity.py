"""Kubernetes resource quantities, parsed and ordered exactly as apimachinery does.

Contract: ``parse_quantity(text)`` accepts exactly the strings Kubernetes' ``ParseQuantity``
accepts (k8s.io/apimachinery/pkg/api/resource/quantity.go and suffix.go) and raises
``QuantityError`` with Kubernetes' message otherwise. ``Quantity`` compares by exact value, so
``80Gi`` (81920Mi) orders above ``81559Mi``.

Invariants:
- ``amount`` is the exact value after Kubernetes' rounding: away from zero to a multiple of
  10^-9, and binary-suffixed values above 2^63-1 capped there. Nothing is ever a float.
- Kubernetes keeps a quantity in one of two forms, a scaled int64 (``int64Amount``) or an
  arbitrary-precision decimal (``inf.Dec``), and ``isInteger``/``asInteger`` answer from the form,
  not the value (``quantity("1000m").isInteger()`` is false). ``Quantity.int64`` mirrors that
  form as ``(value, scale)``, or ``None`` for the decimal form; ``dec`` holds the decimal form's
  ``(unscaled, scale)`` so that ``asApproximateFloat`` rounds as Go does.
- Work is bounded: a decimal form that would need more than ``_MAX_DIGITS`` digits (Kubernetes
  would allocate a huge big.Int) raises ``QuantityError`` instead.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import MAX_EMAX, MAX_PREC, MIN_EMIN, ROUND_UP, Context, Decimal

_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1
_MAX_DIGITS = 4096
_EXACT = Context(prec=MAX_PREC, Emax=MAX_EMAX, Emin=MIN_EMIN)

FORMAT_MESSAGE = (
    "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
)
NUMERIC_MESSAGE = "unable to parse numeric part of quantity"
SUFFIX_MESSAGE = "unable to parse quantity's suffix"

_DECIMAL_SUFFIXES = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_BINARY_SUFFIXES = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
_SUFFIX_LETTERS = frozenset("eEinumkKMGTP")
_DIGITS = frozenset("0123456789")

# Go's math.Pow10 multiplies two table entries, so its result can differ from a correctly
# rounded 10**n by an ulp; asApproximateFloat uses the same tables to round identically.
_POW10 = [float(f"1e{i}") for i in range(32)]
_POW10_POS32 = [float(f"1e{32 * i}") for i in range(10)]
_POW10_NEG32 = [float(f"1e-{32 * i}") for i in range(11)]


class QuantityError(ValueError):
    """A string that is not a Kubernetes quantity, or arithmetic Kubernetes cannot represent."""


def _fits_int64(value: int) -> bool:
    return _INT64_MIN <= value <= _INT64_MAX


@dataclass(frozen=True, eq=False)
class Quantity:
    """A parsed quantity; equality and order are by exact value, as ``Quantity.Cmp``."""

    amount: Decimal
    int64: tuple[int, int] | None
    dec: tuple[int, int]
    text: str

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Quantity):
            return NotImplemented
        return self.amount == other.amount

    def __hash__(self) -> int:
        return hash(self.amount)

    def __str__(self) -> str:
        return self.text

    def compare(self, other: Quantity) -> int:
        return (self.amount > other.amount) - (self.amount < other.amount)

    def sign(self) -> int:
        return (self.amount > 0) - (self.amount < 0)

    def as_int64(self) -> int | None:
        """``Quantity.AsInt64``: only the int64 form converts, and only without losing digits."""
        if self.int64 is None:
            return None
        value, scale = self.int64
        if scale < 0:
            return None
        if value == 0 or scale == 0:
            return value
        if scale > 19:
            return None
        result = value * 10**scale
        return result if _fits_int64(result) else None

    def as_approximate_float(self) -> float:
        """``Quantity.AsApproximateFloat64``: Go's float arithmetic on the current form."""
        if self.int64 is not None:
            base, exponent = float(self.int64[0]), self.int64[1]
        else:
            unscaled, scale = self.dec
            try:
                base = float(unscaled)
            except OverflowError:
                base = float("inf") if unscaled > 0 else float("-inf")
            exponent = -scale
        return base if exponent == 0 else base * _pow10(exponent)

    def add(self, other: Quantity) -> Quantity:
        return self._combine(other, negate=False)

    def sub(self, other: Quantity) -> Quantity:
        return self._combine(other, negate=True)

    def _combine(self, other: Quantity, *, negate: bool) -> Quantity:
        if self.amount and other.amount and _spread(self.amount, other.amount) > _MAX_DIGITS:
            raise QuantityError("quantity arithmetic out of range")
        amount = _EXACT.subtract(self.amount, other.amount) if negate else _EXACT.add(self.amount, other.amount)
        if self.int64 is not None and other.int64 is not None:
            value, scale = other.int64
            if negate:
                value = value if value == _INT64_MIN else -value  # Go's negation wraps
            summed = _int64_add(self.int64, (value, scale))
            if summed is not None:
                return Quantity(amount, summed, (summed[0], -summed[1]), str(amount))
        left, right = self.dec, other.dec
        if negate:
            right = (-right[0], right[1])
        if not left[0] or not right[0]:
            return Quantity(amount, None, right if not left[0] else left, str(amount))
        scale = max(left[1], right[1])
        unscaled = left[0] * 10 ** (scale - left[1]) + right[0] * 10 ** (scale - right[1])
        return Quantity(amount, None, (unscaled, scale), str(amount))


def quantity_from_int(value: int) -> Quantity:
    """``resource.NewQuantity(value, DecimalExponent)``, used by ``add(int)``/``sub(int)``."""
    return Quantity(Decimal(value), (value, 0), (value, 0), str(value))


def _spread(a: Decimal, b: Decimal) -> int:
    """Digits an exact sum of a and b needs; bounded before adding, never after."""
    return max(a.adjusted(), b.adjusted()) - min(int(a.as_tuple().exponent), int(b.as_tuple().exponent))


def _pow10(exponent: int) -> float:
    if 0 <= exponent <= 308:
        return _POW10_POS32[exponent // 32] * _POW10[exponent % 32]
    if -323 <= exponent < 0:
        return _POW10_NEG32[-exponent // 32] / _POW10[-exponent % 32]
    return float("inf") if exponent > 0 else 0.0


def _int64_add(left: tuple[int, int], right: tuple[int, int]) -> tuple[int, int] | None:
    """``int64Amount.Add``: align to the smaller scale; None when int64 would overflow."""
    (a, a_scale), (b, b_scale) = left, right
    if b == 0:
        return left
    if a == 0:
        return right
    low = min(a_scale, b_scale)
    if a_scale - low > 19 or b_scale - low > 19:
        return None
    a_aligned, b_aligned = a * 10 ** (a_scale - low), b * 10 ** (b_scale - low)
    if not (_fits_int64(a_aligned) and _fits_int64(b_aligned) and _fits_int64(a_aligned + b_aligned)):
        return None
    return a_aligned + b_aligned, low


@dataclass(frozen=True)
class _Scanned:
    negative: bool
    number: str  # sign and digits as written, for the decimal slow path
    integer: str  # integer digits without leading zeros, "0" when none
    fraction: str
    suffix: str


def _scan(text: str) -> _Scanned:
    """The lexical pass of ``parseQuantityString``: sign, digits, fraction, then suffix."""
    end, pos = len(text), 0
    negative = False
    if text[:1] in ("+", "-"):
        negative, pos = text[0] == "-", 1
    while pos < end and text[pos] == "0":
        pos += 1
    if pos == end:
        return _Scanned(negative, "0", "0", "", "")
    start = pos
    while pos < end and text[pos] in _DIGITS:
        pos += 1
    integer = text[start:pos] or "0"
    fraction = ""
    if pos < end and text[pos] == ".":
        pos += 1
        start = pos
        while pos < end and text[pos] in _DIGITS:
            pos += 1
        fraction = text[start:pos]
        if pos == end:
            return _Scanned(negative, text, integer, fraction, "")
    elif pos == end:
        return _Scanned(negative, text, integer, fraction, "")
    number, suffix_start = text[:pos], pos
    while pos < end and text[pos] in _SUFFIX_LETTERS:
        pos += 1
    if pos < end and text[pos] in ("+", "-"):
        pos += 1
    while pos < end and text[pos] in _DIGITS:
        pos += 1
    if pos < end:
        raise QuantityError(FORMAT_MESSAGE)
    return _Scanned(negative, number, integer, fraction, text[suffix_start:])


def _interpret_suffix(suffix: str) -> tuple[int, int, bool]:
    """(base, exponent, binary) for a suffix, as ``suffixHandler.interpret``."""
    if suffix in _DECIMAL_SUFFIXES:
        return 10, _DECIMAL_SUFFIXES[suffix], False
    if suffix in _BINARY_SUFFIXES:
        return 2, _BINARY_SUFFIXES[suffix], True
    digits = suffix[1:]
    if len(suffix) > 1 and suffix[0] in "eE" and _is_go_int64(digits):
        exponent = (int(digits) + 2**31) % 2**32 - 2**31  # Go truncates the int64 to int32
        return 10, exponent, False
    raise QuantityError(SUFFIX_MESSAGE)


def _is_go_int64(text: str) -> bool:
    body = text[1:] if text[:1] in ("+", "-") else text
    return bool(body) and all(c in _DIGITS for c in body) and _fits_int64(int(text))


def parse_quantity(text: str) -> Quantity:
    """``resource.ParseQuantity``: the int64 fast path when it is exact, else the decimal path."""
    if not text:
        raise QuantityError(FORMAT_MESSAGE)
    scanned = _scan(text)
    base, exponent, binary = _interpret_suffix(scanned.suffix)
    digits = scanned.integer + scanned.fraction
    if binary:
        # Kubernetes' own precision estimate decides which form it keeps; mirrored as written.
        fast = not scanned.fraction and 15 - len(scanned.integer) - (exponent * 3 // 10) - 1 >= 0
        scale, multiplier = 0, 2**exponent
    else:
        fast = 18 - len(digits) >= 0
        scale, multiplier = exponent - len(scanned.fraction), 1
    if fast and scale >= -9:
        value = int(digits) * multiplier
        if _fits_int64(value):
            value = -value if scanned.negative else value
            return Quantity(Decimal(value).scaleb(scale, _EXACT), (value, scale), (value, -scale), text)
    return _parse_decimal(text, scanned, base, exponent)


def _parse_decimal(text: str, scanned: _Scanned, base: int, exponent: int) -> Quantity:
    """The ``inf.Dec`` path: exact value, rounded away from zero to nanos, binary capped."""
    if not any(c in _DIGITS for c in scanned.number):
        raise QuantityError(NUMERIC_MESSAGE)
    magnitude = Decimal(scanned.integer + "." + (scanned.fraction or "0"))
    if base == 10:
        magnitude = magnitude.scaleb(exponent, _EXACT)
    else:
        magnitude = _EXACT.multiply(magnitude, Decimal(2**exponent))
    if magnitude == 0:
        return Quantity(Decimal(0), None, (0, 0), text)
    if magnitude.adjusted() > _MAX_DIGITS:
        raise QuantityError("quantity too large to represent")
    sign = -1 if scanned.negative else 1
    if base == 2 and magnitude > _INT64_MAX:
        return Quantity(Decimal(sign * _INT64_MAX), None, (sign * _INT64_MAX, 0), text)
    nanos = int(magnitude.scaleb(9, _EXACT).to_integral_value(rounding=ROUND_UP, context=_EXACT))
    return Quantity(Decimal(sign * nanos).scaleb(-9, _EXACT), None, (sign * nanos, 9), text)
