"""JavaScript value semantics of the condition language (AUT-34), shared by the Python evaluator and the SQL
compiler: `String()` and `Number()` conversions and the `contact_property` operators on plain values."""

from __future__ import annotations

import math
import operator as op
import re
from collections.abc import Callable
from decimal import Decimal
from typing import Any

from owlat.conditions.language import ABSENT, ConditionError

#: ECMAScript WhiteSpace + LineTerminator (what `String.prototype.trim` and `Number()` strip).
JS_WHITESPACE = (
    "\t\n\v\f\r \u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
    "\u2028\u2029\u202f\u205f\u3000\ufeff"
)
_JS_DECIMAL = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
_JS_RADIX = re.compile(r"0(?:([xX])([0-9a-fA-F]+)|([oO])([0-7]+)|([bB])([01]+))")


def js_to_number(value: Any) -> float:
    """JavaScript `Number(value)`; `ABSENT` is `undefined`."""
    if value is ABSENT:
        return math.nan
    if value is None:
        return 0.0
    if isinstance(value, bool):
        return 1.0 if value else 0.0
    if isinstance(value, int):
        try:
            return float(value)
        except OverflowError:
            return math.inf if value > 0 else -math.inf
    if isinstance(value, float):
        return value
    if not isinstance(value, str):
        return math.nan
    s = value.strip(JS_WHITESPACE)
    if s == "":
        return 0.0
    if s in ("Infinity", "+Infinity"):
        return math.inf
    if s == "-Infinity":
        return -math.inf
    if _JS_DECIMAL.fullmatch(s):
        return float(s)
    m = _JS_RADIX.fullmatch(s)
    if m:
        digits, base = (m.group(2), 16) if m.group(1) else (m.group(4), 8) if m.group(3) else (m.group(6), 2)
        try:
            return float(int(digits, base))
        except OverflowError:
            return math.inf
    return math.nan


def js_number_to_string(x: float) -> str:
    """JavaScript `Number.prototype.toString()` (shortest round-trip digits, JS exponent rules)."""
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "Infinity" if x > 0 else "-Infinity"
    if x == 0:
        return "0"
    sign = "-" if x < 0 else ""
    tup = Decimal(repr(abs(x))).normalize().as_tuple()
    digits = "".join(str(d) for d in tup.digits)
    k = len(digits)
    n = int(tup.exponent) + k
    if k <= n <= 21:
        body = digits + "0" * (n - k)
    elif 0 < n <= 21:
        body = digits[:n] + "." + digits[n:]
    elif -6 < n <= 0:
        body = "0." + "0" * (-n) + digits
    else:
        e = n - 1
        exp = f"e{'+' if e >= 0 else '-'}{abs(e)}"
        body = (digits + exp) if k == 1 else (digits[0] + "." + digits[1:] + exp)
    return sign + body


def js_to_string(value: Any) -> str:
    """JavaScript `String(value)` with absent/null read as `""` (AUT-34)."""
    if value is ABSENT or value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        try:
            return js_number_to_string(float(value))
        except OverflowError:
            return "Infinity" if value > 0 else "-Infinity"
    if isinstance(value, float):
        return js_number_to_string(value)
    return str(value)


NUMERIC_OPS: dict[str, Callable[[float, float], bool]] = {
    "gt": op.gt,
    "lt": op.lt,
    "gte": op.ge,
    "lte": op.le,
}


def compare_values(operator: str, actual: Any, expected: Any) -> bool:
    """Apply a `contact_property` operator to an actual value (str, None or ABSENT) and the condition value."""
    if operator in ("equals", "not_equals", "contains", "not_contains"):
        a = js_to_string(actual).lower()
        b = js_to_string(expected).lower()
        if operator == "equals":
            return a == b
        if operator == "not_equals":
            return a != b
        if operator == "contains":
            return b in a
        return b not in a
    if operator in NUMERIC_OPS:
        a_num = js_to_number(actual)
        b_num = js_to_number(expected)
        if math.isnan(a_num) or math.isnan(b_num):
            return False
        return NUMERIC_OPS[operator](a_num, b_num)
    if operator == "is_empty":
        return actual is ABSENT or actual is None or actual == ""
    if operator == "not_empty":
        return not (actual is ABSENT or actual is None or actual == "")
    if operator == "is_true":
        return actual is True or actual == "true"
    if operator == "is_false":
        return actual is False or actual == "false"
    raise ConditionError(f"Unknown operator {operator!r} for contact_property.", "operator")
