"""A FLOAT or DOUBLE as Spark's CAST(x AS STRING) writes it: Java's Float / Double.toString.

Spark 4 runs on Java 17, whose toString (`FloatingDecimal`) does not always give the shortest
digits: an integral value below 2^63 prints its exact digits less a few insignificant ones (the float
123456792 is `1.23456792E8`, not `1.2345679E8`), and other values print the digits of a Steele &
White generation whose stopping test is approximate (1e23 is `9.999999999999999E22`). This module
reproduces that algorithm exactly, from its published structure, with Python integers: the fast
integral path, the estimate of the decimal exponent, digit generation in 32-bit, 64-bit (with their
wrap-around) or unbounded arithmetic, and the final round-up. (Java 19+ prints the shortest digits
instead; a Spark on such a JVM writes some values differently.)

Layout (`_layout`): `d.ddd` for 1e-3 <= |x| < 1e7, else `d.dddE[-]n`; at least one digit after the
point; `NaN`, `Infinity`, `-Infinity`, `0.0`, `-0.0`.

The other way, `read_hex` reads a hexadecimal float (`0x1.8p1`, Java's HexFloatingPointLiteral,
which Spark's CAST to FLOAT / DOUBLE takes): its exact value rounded once to the type.
"""

from __future__ import annotations

import math
import re
import struct

_FIVE_BITS = [0, 3, 5, 7, 10, 12, 14, 17, 19, 21, 24, 26, 28, 31, 33, 35, 38, 40, 42, 45, 47, 49, 52]
_FIVE_BITS += [54, 56, 59, 61]  # about ceil(log2(5 ** i)), as the algorithm estimates sizes


def java_text(x: float, *, single: bool) -> str:
    """Java's Double.toString(x) (Float.toString for `single`, x being a float32 value)."""
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "Infinity" if x > 0 else "-Infinity"
    sign = "-" if math.copysign(1.0, x) < 0 else ""
    if x == 0:
        return f"{sign}0.0"
    digits, exponent = _digits(*_unpack(abs(x), single))
    return sign + _layout(digits, exponent)


def _unpack(x: float, single: bool) -> tuple[int, int, int]:
    """(binary exponent, 53-bit aligned fraction with its leading 1, significant bits) of x > 0."""
    if single:
        bits = struct.unpack("<I", struct.pack("<f", x))[0]
        fraction, biased, width, bias = bits & 0x7FFFFF, bits >> 23, 24, 127
    else:
        bits = struct.unpack("<Q", struct.pack("<d", x))[0]
        fraction, biased, width, bias = bits & ((1 << 52) - 1), bits >> 52, 53, 1023
    if biased:
        fraction |= 1 << (width - 1)
        significant = width
    else:  # subnormal: normalized, fewer significant bits
        shift = width - fraction.bit_length()
        fraction, biased, significant = fraction << shift, 1 - shift, fraction.bit_length()
    return biased - bias, fraction << (53 - width), significant


def _digits(bin_exp: int, fract: int, significant: int) -> tuple[str, int]:
    """The decimal digits and exponent (value = 0.digits * 10**exponent) Java's dtoa develops."""
    tail = (fract & -fract).bit_length() - 1
    fract_bits = 53 - tail
    tiny = max(0, fract_bits - bin_exp - 1)
    if -21 <= bin_exp <= 62 and tiny == 0 and fract_bits + _FIVE_BITS[0] < 64:
        drop = len(str(1 << (bin_exp - significant - 1))) - 1 if bin_exp - significant - 1 > 1 else 0
        value = fract << (bin_exp - 52) if bin_exp >= 52 else fract >> (52 - bin_exp)
        return _long_digits(value, drop)
    dec_exp = _estimate_exponent(fract, bin_exp)
    b5, s5 = max(0, -dec_exp), max(0, dec_exp)
    b2, s2 = b5 + tiny + bin_exp - (fract_bits - 1), s5 + tiny
    m2 = b5 + tiny + bin_exp - significant
    common = min(b2, s2)
    b2, s2, m2 = b2 - common, s2 - common, m2 - common - (1 if fract_bits == 1 else 0)
    if m2 < 0:
        b2, s2, m2 = b2 - m2, s2 - m2, 0
    b_bits = fract_bits + b2 + (_FIVE_BITS[b5] if b5 < len(_FIVE_BITS) else b5 * 3)
    ten_s_bits = s2 + 1 + (_FIVE_BITS[s5 + 1] if s5 + 1 < len(_FIVE_BITS) else (s5 + 1) * 3)
    width = 32 if b_bits < 32 and ten_s_bits < 32 else 64 if b_bits < 64 and ten_s_bits < 64 else 0
    b, s, m = (fract >> tail) * 5**b5 << b2, 5**s5 << s2, 5**b5 << m2
    return _generate(b, s, m, dec_exp, width)


def _long_digits(value: int, drop: int) -> tuple[str, int]:
    """The fast path: an integral value, its `drop` low digits rounded off (half up)."""
    exponent = 0
    if drop:
        value, residue = divmod(value, 10**drop)
        exponent, value = drop, value + (residue >= 10**drop // 2)
    text = str(value)
    return text.rstrip("0"), exponent + len(text)


def _estimate_exponent(fract: int, bin_exp: int) -> int:
    """floor(log10(x)), estimated in double arithmetic exactly as Java does (it may be one low)."""
    mantissa: float = struct.unpack("<d", struct.pack("<Q", (1023 << 52) | (fract & ((1 << 52) - 1))))[0]
    return math.floor((mantissa - 1.5) * 0.289529654 + 0.176091259 + bin_exp * 0.301029995663981)


def _wrap(v: int, width: int) -> int:
    """`v` in a Java int (width 32) or long (64) after overflow; unbounded for width 0."""
    if not width:
        return v
    half = 1 << (width - 1)
    return (v + half) % (1 << width) - half


def _generate(b: int, s: int, m: int, dec_exp: int, width: int) -> tuple[str, int]:
    """Digits of b / s until within m of either end (Steele & White), then Java's last-digit rounding."""
    tens = s * 10
    q, r = divmod(b, s)
    b, m = _wrap(10 * r, width), _wrap(m * 10, width)
    low, high = (b < m, b + m >= tens) if not width else (b < m, _wrap(b + m, width) > tens)
    out = [] if q == 0 and not high else [q]
    dec_exp -= 0 if out else 1
    if dec_exp < -3 or dec_exp >= 8:  # E-form: at least two digits
        low = high = False
    if not width:  # unbounded: Java's FDBigInteger, whose `high` test is >=
        while not low and not high:
            q, r = divmod(b, s)
            b, m = 10 * r, m * 10
            low, high = b < m, b + m >= tens
            out.append(q)
        difference = (b << 1 > tens) - (b << 1 < tens)
    else:  # Java's int or long: products wrap around; an overflowed m stops at once
        while not low and not high:
            q, r = divmod(b, s)
            b, m = _wrap(10 * r, width), _wrap(m * 10, width)
            low, high = (True, True) if m <= 0 else (b < m, _wrap(b + m, width) > tens)
            out.append(q)
        difference = _wrap((b << 1) - tens, width)
    if high and (not low or difference > 0 or (difference == 0 and out[-1] % 2)):
        return _round_up(out, dec_exp + 1)
    return "".join(map(str, out)), dec_exp + 1


def _round_up(out: list[int], exponent: int) -> tuple[str, int]:
    """Adds one to the last digit; an all-9 run becomes 1 followed by the zeros (exponent + 1)."""
    i = len(out) - 1
    while out[i] == 9 and i > 0:
        out[i] = 0
        i -= 1
    if out[i] == 9:
        out[0], exponent = 1, exponent + 1
    else:
        out[i] += 1
    return "".join(map(str, out)), exponent


def _layout(digits: str, exponent: int) -> str:
    """Java's layout of 0.digits * 10**exponent (see the module docstring)."""
    if 0 < exponent < 8:
        whole, rest = digits[:exponent], digits[exponent:]
        return f"{whole.ljust(exponent, '0')}.{rest or '0'}"
    if -3 < exponent <= 0:
        return f"0.{'0' * -exponent}{digits}"
    return f"{digits[0]}.{digits[1:] or '0'}E{exponent - 1}"


# ------------------------------------------------------------------ reading a hexadecimal float
HEX = r"[+-]?0[xX](?:[0-9a-fA-F]+\.?|[0-9a-fA-F]*\.[0-9a-fA-F]+)[pP][+-]?[0-9]+[fFdD]?"
_HEX = re.compile(r"([+-]?)0[xX]([0-9a-fA-F]*)\.?([0-9a-fA-F]*)[pP]([+-]?[0-9]+)[fFdD]?")
# (significant bits, the smallest normal exponent, the largest exponent) of DOUBLE and FLOAT
_FORMATS = {False: (53, -1022, 1023), True: (24, -126, 127)}


def read_hex(text: str, *, single: bool) -> float:
    """Java's Double.parseDouble (Float.parseFloat for `single`) of a hexadecimal float (`HEX`,
    trimmed): the exact value `0x<digits>.<digits>p<exponent>` rounded once, half to even, to the
    type (subnormals as such, past the largest finite value: infinity)."""
    found = _HEX.fullmatch(text)
    if found is None:
        raise ValueError(f"not a hexadecimal float: {text!r}")
    sign, whole, fraction, exponent = found.groups()
    mantissa = int(whole + fraction or "0", 16)
    scale = int(exponent) - 4 * len(fraction)  # the value is mantissa * 2**scale
    negative = sign == "-"
    if mantissa == 0:
        return -0.0 if negative else 0.0
    bits, lowest, highest = _FORMATS[single]
    top = scale + mantissa.bit_length() - 1  # 2**top <= value < 2**(top + 1)
    if top > highest + 1:
        return -math.inf if negative else math.inf
    quantum = max(top, lowest) - bits + 1  # the exponent of the last bit the type keeps
    shift = quantum - scale
    kept = mantissa << -shift if shift <= 0 else _half_even(mantissa, shift)
    value = math.ldexp(kept, quantum) if kept.bit_length() + quantum <= highest + 1 else math.inf
    return -value if negative else value


def _half_even(mantissa: int, shift: int) -> int:
    """`mantissa / 2**shift` rounded half to even."""
    kept, rest = mantissa >> shift, mantissa & ((1 << shift) - 1)
    half = 1 << (shift - 1)
    return kept + (rest > half or (rest == half and kept & 1))
