"""DATE and TIMESTAMP values to and from text, exactly as Spark 4's CAST (session time zone UTC).

Calendar: proleptic Gregorian over the whole range of the types, computed here on epoch days with
integer arithmetic (`civil`, `epoch_days`): Arrow's own calendar functions are wrong far from 1970.

Text: a DATE is `yyyy-MM-dd`, a TIMESTAMP `yyyy-MM-dd HH:mm:ss[.ffffff]` (the fraction without its
trailing zeros); a year past 9999 gets a `+`, one before year 0 a `-` (`+10000-01-01`, `-0001-...`).

Reading (Spark's `stringToDate` / `parseTimestampString`), after trimming bytes 0-32 and 127: a DATE
is `[+-]yyyy[yyy]`, `-[m]m`, `-[d]d`, then after a space or `T` anything; a TIMESTAMP is
`[+-]yyyy[yy][-[m]m[-[d]d[( |T)[h]h[:[m]m[:[s]s[.fraction][zone]]]]]]` or a time alone (`[h]h:[m]m...`,
or `T[h]h...` at the very start), which takes today's date in its zone (Spark does the same). The
fraction keeps six digits (the rest dropped); the zone is any text after the seconds (`zones`).
Anything else, an impossible date or time, or a value out of the type's range fails (ANSI:
CAST_INVALID_INPUT). TIMESTAMP_NTZ reads the same text, ignores a valid zone and refuses a time alone.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from airflow_txnlog.engine.sql.types import Failed, Value
from airflow_txnlog.engine.sql.zones import zone

TRIM = "".join(map(chr, range(33))) + "\x7f"  # what Spark trims off a date, a number...
_DAY_US, _MAX_SECONDS = 86_400_000_000, 9_223_372_036_854
_DATE = r"^(?P<sign>[+-]?)(?P<y>\d{4,7})(?:-(?P<mo>\d{1,2})(?:-(?P<d>\d{1,2})(?:[ T](?s:.*))?)?)?$"
_STAMP = r"^(?P<sign>[+-]?)(?P<y>\d{4,6})(?:-(?P<mo>\d{1,2})(?:-(?P<d>\d{1,2})(?:(?P<sep>[ T])"
_STAMP += r"(?P<rest>(?s:.*)))?)?)?$"
_TIME = r"^(?P<h>\d{1,2})(?::(?P<mi>\d{1,2})(?::(?P<s>\d{1,2})(?P<frac>\.\d*)?(?P<zone>\D(?s:.*))?)?)?$"


def civil(days: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(year, month, day) of days since 1970-01-01 (H. Hinnant's civil_from_days)."""
    z = days.astype(np.int64) + 719468
    era = z // 146097
    doe = z - era * 146097
    yoe = (doe - doe // 1460 + doe // 36524 - doe // 146096) // 365
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    mp = (5 * doy + 2) // 153
    month = np.where(mp < 10, mp + 3, mp - 9)
    return yoe + era * 400 + (month <= 2), month, doy - (153 * mp + 2) // 5 + 1


def epoch_days(year: np.ndarray, month: np.ndarray, day: np.ndarray) -> np.ndarray:
    """Days since 1970-01-01 of a (valid) proleptic Gregorian date (days_from_civil)."""
    y = year - (month <= 2)
    era = y // 400
    yoe = y - era * 400
    doy = (153 * np.where(month > 2, month - 3, month + 9) + 2) // 5 + day - 1
    return era * 146097 + yoe * 365 + yoe // 4 - yoe // 100 + doy - 719468  # type: ignore[no-any-return]


def month_days(year: np.ndarray, month: np.ndarray) -> np.ndarray:
    leap = ((year % 4 == 0) & (year % 100 != 0)) | (year % 400 == 0)
    lengths = np.array([0, 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31])[np.clip(month, 0, 12)]
    return np.asarray(lengths + (leap & (month == 2)))


def per_array(fn: Callable[[pa.Array], pa.Array], v: Value) -> Value:
    """`fn` of an array, applied to a scalar too (as a one-value array)."""
    return fn(pa.repeat(v, 1))[0] if isinstance(v, pa.Scalar) else fn(v)


def ints(v: pa.Array) -> np.ndarray:
    """The values of an integer or temporal array as int64 (NULL as 0)."""
    storage = {4: pa.int32(), 8: pa.int64()}[v.type.byte_width]
    return np.array(pc.fill_null(v.view(storage), 0).to_numpy(zero_copy_only=False), dtype=np.int64)


def nulls(*arrays: pa.Array) -> np.ndarray:
    """Where any of the arrays is NULL, as a numpy mask."""
    masks = [np.asarray(pc.is_null(a).to_numpy(zero_copy_only=False), dtype=bool) for a in arrays]
    return np.asarray(np.logical_or.reduce(masks), dtype=bool)


def padded(values: np.ndarray, width: int) -> pa.Array:
    """Integers as text, zero-padded on the left to `width`."""
    return pc.utf8_lpad(pc.cast(pa.array(values), pa.string()), width=width, padding="0")


def year_parts(y: np.ndarray) -> list[Any]:
    """A year as Spark writes it (`uuuu`): four digits at least, `+` past 9999, `-` before 0."""
    sign = pa.array(np.where(y > 9999, "+", np.where(y < 0, "-", "")))
    return [sign, padded(np.abs(y), 4)]


def _date_parts(days: np.ndarray) -> list[Any]:
    """The pieces of `yyyy-MM-dd` (with Spark's year sign) for a join."""
    y, m, d = civil(days)
    return [*year_parts(y), "-", padded(m, 2), "-", padded(d, 2)]


def joined(v: pa.Array, parts: list[Any]) -> pa.Array:
    """The parts (arrays or strings) joined per row; NULL where `v` is."""
    text = pc.binary_join_element_wise(*parts, "")
    return pc.if_else(pc.is_valid(v), text, pa.scalar(None, pa.string()))


def date_text(v: Value) -> Value:
    """DATE values as Spark's text."""
    return per_array(lambda a: joined(a, _date_parts(ints(a))), v)


def timestamp_text(v: Value) -> Value:
    """TIMESTAMP (UTC) or TIMESTAMP_NTZ values as Spark's text."""

    def text(a: pa.Array) -> pa.Array:
        us = ints(a)
        days, tod = us // _DAY_US, us % _DAY_US
        fraction = pc.utf8_rtrim(padded(tod % 1_000_000, 6), characters="0")
        point = pc.if_else(pc.equal(fraction, ""), "", ".")
        clock = [padded(tod // 3_600_000_000, 2), ":", padded(tod // 60_000_000 % 60, 2), ":"]
        return joined(a, [*_date_parts(days), " ", *clock, padded(tod // 1_000_000 % 60, 2), point, fraction])

    return per_array(text, v)


def _fields(parts: pa.StructArray, names: str, default: int = 0) -> list[np.ndarray]:
    """Integer fields of a regex match ('' and no match: `default`)."""
    out = []
    for name in names.split():
        f = _group(parts, name)
        out.append(ints(pc.cast(pc.if_else(pc.equal(f, ""), str(default), f), pa.int64())))
    return out


def _refuse(v: pa.Array, ok: np.ndarray, target: str) -> None:
    """Failed naming the first non-NULL value that is not `ok`."""
    bad = np.flatnonzero(~ok & pc.is_valid(v).to_numpy(zero_copy_only=False))
    if len(bad):
        raise Failed(f"the value {v[int(bad[0])].as_py()!r} cannot be cast to {target} (CAST_INVALID_INPUT)")


def text_to_date(v: Value) -> Value:
    """Text to DATE, as Spark's stringToDate (see the module docstring)."""

    def read(a: pa.Array) -> pa.Array:
        parts = pc.extract_regex(pc.utf8_trim(pc.cast(a, pa.string()), characters=TRIM), pattern=_DATE)
        y, mo, d = _fields(parts, "y mo d", 1)
        y = np.where(_flags(pc.equal(_group(parts, "sign"), "-")), -y, y)
        ok = _flags(pc.is_valid(parts)) & (mo >= 1) & (mo <= 12)
        ok &= (d >= 1) & (d <= month_days(y, mo))
        days = np.where(ok, epoch_days(y, mo, d), 0)
        ok &= (days >= -(2**31)) & (days < 2**31)
        _refuse(a, ok, "DATE")
        return pa.array(days.astype(np.int32), pa.int32(), mask=~ok).view(pa.date32())

    return per_array(read, v)


def text_to_timestamp(v: Value, zoned: bool) -> Value:
    """Text to TIMESTAMP (`zoned`: UTC, the text's zone applied) or TIMESTAMP_NTZ (see the module
    docstring), as Spark's parseTimestampString."""
    target = "TIMESTAMP" if zoned else "TIMESTAMP_NTZ"

    def read(a: pa.Array) -> pa.Array:
        raw = pc.cast(a, pa.string())
        trimmed = pc.utf8_trim(raw, characters=TRIM)
        stamp = pc.extract_regex(trimmed, pattern=_STAMP)
        alone = pc.and_(pc.is_null(stamp), pc.match_substring_regex(trimmed, r"^\d{1,2}:"))
        tee = pc.starts_with(raw, "T")
        rest = pc.if_else(tee, pc.utf8_slice_codeunits(trimmed, 1), pc.if_else(alone, trimmed, None))
        clock = pc.extract_regex(pc.coalesce(rest, _group(stamp, "rest")), pattern=_TIME)
        just_time = _flags(pc.or_(alone, tee))
        has_time = just_time | _flags(pc.not_equal(_group(stamp, "sep"), ""))
        ok = (_flags(pc.is_valid(stamp)) | just_time) & (~has_time | _flags(pc.is_valid(clock)))
        micros, valid = _instants(stamp, clock, ok & (zoned | ~just_time), just_time, zoned)
        _refuse(a, valid, target)
        return pa.array(micros, pa.int64(), mask=~valid).view(pa.timestamp("us", "UTC" if zoned else None))

    return per_array(read, v)


def _group(parts: Any, name: str) -> pa.Array:
    """A group of a regex match: '' where it did not take part or the text did not match."""
    return pc.fill_null(pc.struct_field(parts, name), "")


def _flags(v: pa.Array) -> np.ndarray:
    return np.asarray(pc.fill_null(v, False).to_numpy(zero_copy_only=False), dtype=bool)


def _instants(stamp: Any, clock: Any, ok: np.ndarray, just_time: np.ndarray, zoned: bool) -> Any:
    """(microseconds since the epoch, valid) of the matched texts."""
    (y, mo, d), (h, mi, s) = _fields(stamp, "y mo d", 1), _fields(clock, "h mi s")
    y = np.where(_flags(pc.equal(_group(stamp, "sign"), "-")), -y, y)
    micros = ints(
        pc.cast(pc.utf8_rpad(pc.utf8_slice_codeunits(_group(clock, "frac"), 1, 7), 6, "0"), pa.int64())
    )
    zones, index = _zones(_group(clock, "zone"))
    ok = ok & ~np.array([z is None for z in zones], dtype=bool)[index]
    for i in np.flatnonzero(just_time & ok):  # today's date in the text's zone (UTC if none), as Spark
        today = dt.datetime.now(_tzinfo(zones[index[i]])).date()
        y[i], mo[i], d[i] = today.year, today.month, today.day
    ok &= (mo >= 1) & (mo <= 12) & (d >= 1) & (d <= month_days(y, mo)) & (h <= 23) & (mi <= 59) & (s <= 59)
    seconds = np.where(ok, epoch_days(y, mo, d), 0) * 86400 + h * 3600 + mi * 60 + s
    if zoned:
        seconds -= np.array([z if isinstance(z, int) else 0 for z in zones], dtype=np.int64)[index]
        regions = np.array([isinstance(z, dt.tzinfo) for z in zones], dtype=bool)[index]
        for i in np.flatnonzero(ok & regions):
            seconds[i] -= _offset_at(zones[index[i]], int(seconds[i]))
    ok &= (seconds >= -_MAX_SECONDS - 1) & (seconds <= _MAX_SECONDS)  # within a BIGINT of microseconds
    ok &= ((seconds < _MAX_SECONDS) | (micros <= 775807)) & (
        (seconds > -_MAX_SECONDS - 1) | (micros >= 224192)
    )
    return np.where(ok, seconds * 1_000_000 + micros, 0), ok


def _zones(texts: pa.Array) -> tuple[list[Any], np.ndarray]:
    """The distinct zones of the texts ('': none, 0) and each row's index among them."""
    names = pc.unique(texts)
    index = np.asarray(pc.index_in(texts, names).to_numpy(zero_copy_only=False), dtype=np.int64)
    return [zone(z) if z else 0 for z in names.to_pylist()], index


def _tzinfo(found: Any) -> dt.tzinfo:
    return dt.timezone(dt.timedelta(seconds=found)) if isinstance(found, int) else found


_FIRST_SECOND, _END_SECOND = -62135596800, 253402300800  # 0001-01-01 and 10000-01-01, UTC
_CYCLE = 146097 * 86400  # 400 Gregorian years


def _offset_at(found: Any, local_seconds: int) -> int:
    """The offset (seconds) of a zone at a local time, as Java's ZonedDateTime.of: the earlier offset
    in an overlap, the one before a gap (the same instant as Java's shift forward). Outside the
    years 1 to 9999 (Python's), the time moves by whole 400-year cycles of the calendar into them:
    after a zone's last transition its recurring rules (the same weekdays every cycle) decide, as in
    Java's ZoneRules; before its first, its first offset (local mean time) holds."""
    if local_seconds < _FIRST_SECOND:
        local_seconds -= (local_seconds - _FIRST_SECOND) // _CYCLE * _CYCLE
    elif local_seconds >= _END_SECOND:
        local_seconds -= ((local_seconds - _END_SECOND) // _CYCLE + 1) * _CYCLE
    local = dt.datetime(1970, 1, 1) + dt.timedelta(seconds=local_seconds)
    offset = local.replace(tzinfo=found, fold=0).utcoffset()
    return int(offset.total_seconds()) if offset is not None else 0
