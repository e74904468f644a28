"""The time zone written at the end of a timestamp text, read as Spark reads it (`getZoneId`): Java's
`ZoneId.of(text, SHORT_IDS)` after Spark's two fix-ups (`+h:mm` and `+hh:m` gain their zero).

`zone(text)` gives a fixed offset in seconds (`Z`, `+h`, `+hh`, `+hhmm`, `+hh:mm`, `+hhmmss`,
`+hh:mm:ss` up to 18 hours; `UTC`, `GMT`, `UT` alone or followed by such an offset; Java's short ids
`EST`, `MST`, `HST`), a region (`Europe/Paris`, `CET`, and the other short ids, which name regions) as
a `zoneinfo.ZoneInfo` from the system's time zone database, or None where Java refuses the text.
"""

from __future__ import annotations

import functools
import re
import zoneinfo

_SHORT_IDS = {"EST": "-05:00", "MST": "-07:00", "HST": "-10:00", "ACT": "Australia/Darwin"}
_SHORT_IDS |= {"AET": "Australia/Sydney", "AGT": "America/Argentina/Buenos_Aires", "ART": "Africa/Cairo"}
_SHORT_IDS |= {"AST": "America/Anchorage", "BET": "America/Sao_Paulo", "BST": "Asia/Dhaka"}
_SHORT_IDS |= {"CAT": "Africa/Harare", "CNT": "America/St_Johns", "CST": "America/Chicago"}
_SHORT_IDS |= {"CTT": "Asia/Shanghai", "EAT": "Africa/Addis_Ababa", "ECT": "Europe/Paris"}
_SHORT_IDS |= {"IET": "America/Indiana/Indianapolis", "IST": "Asia/Kolkata", "JST": "Asia/Tokyo"}
_SHORT_IDS |= {"MIT": "Pacific/Apia", "NET": "Asia/Yerevan", "NST": "Pacific/Auckland"}
_SHORT_IDS |= {"PLT": "Asia/Karachi", "PNT": "America/Phoenix", "PRT": "America/Puerto_Rico"}
_SHORT_IDS |= {"PST": "America/Los_Angeles", "SST": "Pacific/Guadalcanal", "VST": "Asia/Ho_Chi_Minh"}
_OFFSET = re.compile(r"([+-])(\d\d?)(?:(:?)(\d\d)(?:\3(\d\d))?)?")
_REGION = re.compile(r"[A-Za-z][A-Za-z0-9~/._+-]+")


@functools.lru_cache(maxsize=256)
def zone(text: str) -> int | zoneinfo.ZoneInfo | None:
    """The zone of `text` (see the module docstring); None if Java's ZoneId.of refuses it."""
    text = text.strip("".join(map(chr, range(33))))  # Scala's trim: characters up to the space
    text = re.sub(r"([+-])(\d):", r"\g<1>0\2:", text, count=1)
    text = re.sub(r"([+-])(\d\d):(\d)$", r"\1\2:0\3", text, count=1)
    text = _SHORT_IDS.get(text, text)
    if len(text) <= 1 or text[0] in "+-":
        return 0 if text == "Z" else _offset(text)
    prefix = 3 if text.startswith(("UTC", "GMT")) else 2 if text.startswith("UT") else 0
    if prefix and len(text) == prefix:
        return 0
    if prefix and text[prefix] in "+-":
        return _offset(text[prefix:])
    if not _REGION.fullmatch(text) or text not in _regions():
        return None
    return zoneinfo.ZoneInfo(text)


def _offset(text: str) -> int | None:
    """Java's ZoneOffset.of: +h, +hh, +hhmm, +hh:mm, +hhmmss, +hh:mm:ss, at most 18:00:00."""
    m = _OFFSET.fullmatch(text)
    if m is None or (len(m.group(2)) == 1 and m.group(4)):
        return None
    hours, minutes, seconds = int(m.group(2)), int(m.group(4) or 0), int(m.group(5) or 0)
    if hours > 18 or minutes > 59 or seconds > 59 or hours * 3600 + minutes * 60 + seconds > 18 * 3600:
        return None
    return (-1 if m.group(1) == "-" else 1) * (hours * 3600 + minutes * 60 + seconds)


@functools.cache
def _regions() -> frozenset[str]:
    return frozenset(zoneinfo.available_timezones())
