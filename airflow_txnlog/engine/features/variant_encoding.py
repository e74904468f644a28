"""Variant values as written to Parquet unshredded: a structural check of the two binaries before writing.

Delta's `variant` type is stored as a struct of two binaries, `metadata` and `value`, in the Parquet
Variant binary encoding (parquet-format VariantEncoding.md). A writer must only store values that
conform to it, so user-supplied bytes are checked here; nothing is decoded to Python objects.

metadata: a header byte (bits 0-3 version, which must be 1; bit 4 sorted_strings; bit 5 reserved;
bits 6-7 offset_size - 1), then dictionary_size and dictionary_size + 1 offsets, each offset_size bytes
little-endian, then the dictionary strings. Checked: version 1; the offsets fit; the first is 0, they
never decrease and the last is exactly the length of the string area (the spec: "the last offset value
will always be the total length of `bytes`", and `bytes` is the last part, so trailing bytes are
refused); every string is UTF-8; with sorted_strings set, strings are unique and in unsigned byte order.

value: a header byte whose low 2 bits are the basic type and whose high 6 bits the type's header:
  0 primitive    header = type id 0..20 (null, true, false, int8/16/32/64, double, decimal4/8/16, date,
                 timestamp, timestamp_ntz, float, binary, string, time_ntz, timestamp_nanos,
                 timestamp_ntz_nanos, uuid), then a fixed number of bytes, or for binary and string a
                 4-byte length and that many bytes. A decimal is a scale byte then a little-endian
                 unscaled integer of 4, 8 or 16 bytes; scale and digits are at most 9, 18 and 38.
  1 short string header = length 0..63, then the UTF-8 bytes.
  2 object       header bits 0-1 field_offset_size - 1, bits 2-3 field_id_size - 1, bit 4 is_large
                 (a 4-byte rather than 1-byte num_elements), then num_elements field ids, num_elements + 1
                 field offsets, then the field values.
  3 array        header bits 0-1 field_offset_size - 1, bit 2 is_large, then num_elements,
                 num_elements + 1 offsets and the element values.
Invariants checked: every declared size fits in the bytes present (nothing is allocated from a declared
size before that); strings are UTF-8; unknown primitive type ids are refused (a writer must not invent
types); an object's field ids index the dictionary and name its fields in strictly increasing unsigned
byte order (sorted, no duplicate names); the values of a container exactly tile its value area, as the
grammar `fields: <value>*` says: array offsets start at 0 and never decrease, each element filling its
slot; object values (which may be in any order) start at distinct offsets, the lowest 0, each running to
the next start, the last to the final offset; the top-level value has no trailing bytes (the grammar
`value: <value_metadata> <value_data>?`). Nesting deeper than `MAX_DEPTH` containers is refused; the walk
uses an explicit stack, never Python recursion.
"""

from __future__ import annotations

import pyarrow as pa

from airflow_txnlog.engine.errors import InvalidArgumentError

MAX_DEPTH = 1000
"""Most arrays/objects a value may be nested in, counting the outermost."""

_PRIMITIVE_NAMES = (
    "null", "true", "false", "int8", "int16", "int32", "int64", "double", "decimal4", "decimal8",
    "decimal16", "date", "timestamp", "timestamp_ntz", "float", "binary", "string", "time_ntz",
    "timestamp_nanos", "timestamp_ntz_nanos", "uuid",
)  # fmt: skip
# Encoded size of each primitive, header byte included; 0 for binary and string (4-byte length + bytes).
_PRIMITIVE_SIZES = (1, 1, 1, 2, 3, 5, 9, 9, 6, 10, 18, 5, 9, 9, 5, 0, 0, 9, 9, 9, 17)
_DECIMAL_MAX_DIGITS = {8: 9, 9: 18, 10: 38}
# By header byte: the size of a fixed-size primitive with nothing to check but its length, else 0.
_PLAIN_SIZES = tuple(
    _PRIMITIVE_SIZES[h >> 2]
    if h & 3 == 0 and h >> 2 < len(_PRIMITIVE_SIZES) and h >> 2 not in (8, 9, 10)
    else 0
    for h in range(256)
)
_METADATA_CACHE_SIZE = 1024

# A value to check: (start byte, exact size it must have, nesting level of the containers around it).
_Item = tuple[int, int, int]


def check_value(metadata: bytes, value: bytes) -> str | None:
    """None when (metadata, value) is a well-formed Variant; else a short reason, e.g. "metadata version
    2 is not 1" or "object field id 7 is outside the 3-entry dictionary"."""
    keys = _parse_metadata(metadata)
    if isinstance(keys, str):
        return keys
    return _check_value(value, keys)


def check_array(arr: pa.Array | pa.ChunkedArray, column: str) -> None:
    """Check every non-NULL slot of a Variant column: a struct array with binary (or large_binary)
    children `metadata` and `value`, in any order. Raises InvalidArgumentError naming the column, the
    first bad row's index and the reason."""
    _check_type(arr.type, column)
    chunks = arr.chunks if isinstance(arr, pa.ChunkedArray) else [arr]
    cache: dict[bytes, list[bytes] | str] = {}
    base = 0
    for chunk in chunks:
        bad = _first_bad_row(chunk.storage if isinstance(chunk, pa.ExtensionArray) else chunk, cache)
        if bad is not None:
            row, reason = base + bad[0], bad[1]
            raise InvalidArgumentError(
                f"column {column!r}: row {row} is not a valid Variant ({reason}); nothing was written"
            )
        base += len(chunk)


def _check_type(typ: pa.DataType, column: str) -> None:
    if isinstance(typ, pa.ExtensionType):
        typ = typ.storage_type
    names = sorted(typ.field(i).name for i in range(typ.num_fields)) if pa.types.is_struct(typ) else []
    ok = names == ["metadata", "value"] and all(
        _is_binary(typ.field(name).type) for name in ("metadata", "value")
    )
    if not ok:
        raise InvalidArgumentError(
            f"column {column!r} is not an unshredded Variant (a struct of binary `metadata` and `value`), "
            f"it is {typ}; nothing was written"
        )


def _is_binary(typ: pa.DataType) -> bool:
    return bool(pa.types.is_binary(typ) or pa.types.is_large_binary(typ) or pa.types.is_binary_view(typ))


def _first_bad_row(chunk: pa.StructArray, cache: dict[bytes, list[bytes] | str]) -> tuple[int, str] | None:
    """(index in the chunk, reason) of the first bad non-NULL slot, else None."""
    metadatas = chunk.field("metadata").to_pylist()
    values = chunk.field("value").to_pylist()
    valid = chunk.is_valid().to_pylist() if chunk.null_count else None
    for i, (metadata, value) in enumerate(zip(metadatas, values, strict=True)):
        if valid is not None and not valid[i]:
            continue
        if metadata is None or value is None:
            return i, f"{'metadata' if metadata is None else 'value'} is NULL"
        keys = cache.get(metadata)
        if keys is None:
            if len(cache) >= _METADATA_CACHE_SIZE:
                cache.clear()
            keys = cache[metadata] = _parse_metadata(metadata)
        reason = keys if isinstance(keys, str) else _check_value(value, keys)
        if reason is not None:
            return i, reason
    return None


def _parse_metadata(metadata: bytes) -> list[bytes] | str:
    """The dictionary's strings, or the reason the metadata is malformed."""
    if not metadata:
        return "metadata is empty"
    header = metadata[0]
    if header & 0x0F != 1:
        return f"metadata version {header & 0x0F} is not 1"
    size = (header >> 6) + 1
    if len(metadata) < 1 + size:
        return f"metadata is truncated: {len(metadata)} bytes hold no {size}-byte dictionary size"
    count = int.from_bytes(metadata[1 : 1 + size], "little")
    strings_start = 1 + size * (count + 2)
    if strings_start > len(metadata):
        return (
            f"metadata is truncated: a {count}-entry dictionary needs {strings_start} bytes "
            f"of header and offsets, there are {len(metadata)}"
        )
    offsets = [int.from_bytes(metadata[p : p + size], "little") for p in range(1 + size, strings_start, size)]
    area = len(metadata) - strings_start
    if offsets[0] != 0:
        return f"metadata's first dictionary offset is {offsets[0]}, not 0"
    if offsets[-1] != area:
        what = "past the end of" if offsets[-1] > area else "short of the end of"
        return f"metadata's last dictionary offset {offsets[-1]} is {what} its {area}-byte string area"
    return _dictionary(metadata, strings_start, offsets, sorted_strings=bool(header & 0x10))


def _dictionary(
    metadata: bytes, start: int, offsets: list[int], *, sorted_strings: bool
) -> list[bytes] | str:
    keys: list[bytes] = []
    for i in range(len(offsets) - 1):
        if offsets[i + 1] < offsets[i]:
            return f"metadata dictionary offsets decrease at entry {i + 1} ({offsets[i]} > {offsets[i + 1]})"
        key = metadata[start + offsets[i] : start + offsets[i + 1]]
        if not _is_utf8(key):
            return f"metadata dictionary entry {i} is not valid UTF-8"
        if sorted_strings and keys and key <= keys[-1]:
            how = "duplicates" if key == keys[-1] else "sorts before"
            return f"metadata has sorted_strings set but entry {i} {_show(key)} {how} entry {i - 1}"
        keys.append(key)
    return keys


def _check_value(value: bytes, keys: list[bytes]) -> str | None:
    """Walk the value with an explicit stack; each item must be exactly its stated size."""
    walk = _Walk(value, keys)
    stack = walk.stack
    while stack:
        start, size, depth = stack.pop()
        got = _PLAIN_SIZES[value[start]] if size else 0  # the commonest leaves, quickly
        if got == 0 or got > size:
            node = walk.node(start, start + size, depth)
            if isinstance(node, str):
                return node
            got = node
        if got != size:
            where = "the value" if start == 0 else f"the value at byte {start}"
            return (
                f"{size - got} unused bytes after {where} (it ends at byte {start + got} of {start + size})"
            )
    return None


class _Walk:
    """One value's bytes, its metadata's dictionary and the stack of values still to check."""

    __slots__ = ("buf", "keys", "stack")

    def __init__(self, buf: bytes, keys: list[bytes]) -> None:
        self.buf, self.keys = buf, keys
        self.stack: list[_Item] = [(0, len(buf), 0)]

    def node(self, pos: int, end: int, depth: int) -> int | str:
        """The encoded size of the value at `pos` (which must end by `end`), its children pushed on the
        stack; or the reason it is malformed."""
        if pos >= end:
            return f"value at byte {pos} is empty (no header byte)"
        header = self.buf[pos]
        basic, sub = header & 3, header >> 2
        if basic == 0:
            return _primitive(self.buf, pos, end, sub)
        if basic == 1:
            if pos + 1 + sub > end:
                return _truncated("short string", pos, 1 + sub, end)
            if not _is_utf8(self.buf[pos + 1 : pos + 1 + sub]):
                return f"short string at byte {pos} is not valid UTF-8"
            return 1 + sub
        if depth >= MAX_DEPTH:
            return f"value is nested deeper than {MAX_DEPTH} levels"
        if basic == 2:
            return self.object(pos, end, sub, depth)
        return self.array(pos, end, sub, depth)

    def object(self, pos: int, end: int, sub: int, depth: int) -> int | str:
        buf = self.buf
        offset_size, id_size, count_size = (sub & 3) + 1, ((sub >> 2) & 3) + 1, 4 if sub & 0x10 else 1
        if pos + 1 + count_size > end:
            return _truncated("object header", pos, 1 + count_size, end)
        count = int.from_bytes(buf[pos + 1 : pos + 1 + count_size], "little")
        ids_start = pos + 1 + count_size
        offsets_start = ids_start + count * id_size
        fields = offsets_start + (count + 1) * offset_size
        if fields > end:
            return _truncated(f"object of {count} fields", pos, fields - pos, end)
        reason = _check_field_names(_offsets(buf, ids_start, offsets_start, id_size), self.keys, pos)
        if reason is not None:
            return reason
        offsets = _offsets(buf, offsets_start, fields, offset_size)
        if fields + offsets[-1] > end:
            return _truncated(f"object of {count} fields", pos, fields + offsets[-1] - pos, end)
        reason = _push_object_values(offsets, fields, depth, self.stack)
        if reason is not None:
            return f"object at byte {pos}: {reason}"
        return fields + offsets[-1] - pos

    def array(self, pos: int, end: int, sub: int, depth: int) -> int | str:
        buf = self.buf
        offset_size, count_size = (sub & 3) + 1, 4 if sub & 0x4 else 1
        if pos + 1 + count_size > end:
            return _truncated("array header", pos, 1 + count_size, end)
        count = int.from_bytes(buf[pos + 1 : pos + 1 + count_size], "little")
        offsets_start = pos + 1 + count_size
        fields = offsets_start + (count + 1) * offset_size
        if fields > end:
            return _truncated(f"array of {count} elements", pos, fields - pos, end)
        offsets = _offsets(buf, offsets_start, fields, offset_size)
        if fields + offsets[-1] > end:
            return _truncated(f"array of {count} elements", pos, fields + offsets[-1] - pos, end)
        if offsets[0] != 0:
            return f"array at byte {pos}: its first offset is {offsets[0]}, not 0"
        children: list[_Item] = []
        for i in range(count):
            if offsets[i + 1] <= offsets[i]:
                how = "decrease" if offsets[i + 1] < offsets[i] else "leave an empty slot"
                return f"array at byte {pos}: offsets {how} at element {i} ({offsets[i]}, {offsets[i + 1]})"
            children.append((fields + offsets[i], offsets[i + 1] - offsets[i], depth + 1))
        self.stack.extend(reversed(children))  # so that elements are checked in order
        return fields + offsets[-1] - pos


def _primitive(buf: bytes, pos: int, end: int, type_id: int) -> int | str:
    if type_id >= len(_PRIMITIVE_SIZES):
        return f"unknown primitive type id {type_id} at byte {pos}"
    name, size = _PRIMITIVE_NAMES[type_id], _PRIMITIVE_SIZES[type_id]
    if size == 0:  # binary or string: a 4-byte length, then the bytes
        if pos + 5 > end:
            return _truncated(f"{name} length", pos, 5, end)
        size = 5 + int.from_bytes(buf[pos + 1 : pos + 5], "little")
        if pos + size > end:
            return _truncated(name, pos, size, end)
        if type_id == 16 and not _is_utf8(buf[pos + 5 : pos + size]):
            return f"string at byte {pos} is not valid UTF-8"
        return size
    if pos + size > end:
        return _truncated(name, pos, size, end)
    if type_id in _DECIMAL_MAX_DIGITS:
        return _decimal(buf, pos, size, name, _DECIMAL_MAX_DIGITS[type_id])
    return size


def _decimal(buf: bytes, pos: int, size: int, name: str, max_digits: int) -> int | str:
    scale = buf[pos + 1]
    if scale > max_digits:
        return f"{name} scale {scale} at byte {pos} is more than {max_digits}"
    unscaled = int.from_bytes(buf[pos + 2 : pos + size], "little", signed=True)
    if abs(unscaled) >= 10**max_digits:
        return f"{name} at byte {pos} has more than {max_digits} digits"
    return size


def _check_field_names(ids: list[int], keys: list[bytes], pos: int) -> str | None:
    """Field ids must index the dictionary and name the fields in strictly increasing byte order."""
    previous: bytes | None = None
    for field_id in ids:
        if field_id >= len(keys):
            return f"object field id {field_id} is outside the {len(keys)}-entry dictionary"
        name = keys[field_id]
        if previous is not None and name <= previous:
            if name == previous:
                return f"object at byte {pos} has field {_show(name)} twice"
            return f"object at byte {pos} lists field {_show(name)} after {_show(previous)} (not sorted)"
        previous = name
    return None


def _push_object_values(offsets: list[int], fields: int, depth: int, stack: list[_Item]) -> str | None:
    """The values, in any order, must tile the value area: distinct starts, the lowest 0, each running to
    the next start and the last to the final offset."""
    total, starts = offsets[-1], sorted(offsets[:-1])
    if (starts[0] if starts else total) != 0:
        return f"no field value starts at offset 0 (the lowest offset is {starts[0] if starts else total})"
    children: list[_Item] = []
    for i, start in enumerate(starts):
        stop = starts[i + 1] if i + 1 < len(starts) else total
        if stop == start:
            what = "two fields share the value" if i + 1 < len(starts) else "a field value is empty"
            return f"{what} at offset {start}"
        if stop < start:
            return f"field offset {start} is past the end of the {total}-byte value area"
        children.append((fields + start, stop - start, depth + 1))
    stack.extend(reversed(children))  # so that values are checked in the order they are laid out
    return None


def _offsets(buf: bytes, start: int, stop: int, size: int) -> list[int]:
    """The little-endian unsigned integers of `size` bytes each in buf[start:stop]."""
    if size == 1:
        return list(buf[start:stop])
    return [int.from_bytes(buf[p : p + size], "little") for p in range(start, stop, size)]


def _truncated(what: str, pos: int, needed: int, end: int) -> str:
    return f"{what} at byte {pos} is truncated: it needs {needed} bytes, {end - pos} remain"


def _is_utf8(data: bytes) -> bool:
    if data.isascii():
        return True
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _show(key: bytes) -> str:
    text = key.decode("utf-8", errors="replace")
    return repr(text if len(text) <= 40 else text[:40] + "...")
