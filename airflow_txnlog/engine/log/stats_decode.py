"""Stats JSON decoded in bulk: a document of stats objects (one per line, as `stats_struct._document`
lays them out) to an Arrow table of the stats schema.

The first decoder is arrow-rs's (through `arro3-io`: the decoder delta-rs reads stats with). Per CPU
second it reads stats ~2x faster than Arrow C++'s reader (`pyarrow.json`), and it releases the GIL,
so the batches a load parses on worker threads run side by side. Where it refuses a document, Arrow
C++'s reader reads it as before (and where that refuses too, the caller parses line by line).

arrow-rs reads some values Arrow C++'s reader refuses; each reading is kept because it stays a true
bound of the column (pruning never skips a file it should read) or matches the line-by-line path:
- a number with a fraction in an integer leaf is truncated toward zero; a decimal with more digits
  than its scale, and a timestamp finer than its unit, are truncated likewise. The column's values lie
  on the leaf's grid (integers, multiples of the scale or the unit), and truncating a max `x >= M` to
  the grid gives a value still `>= M` (and a min likewise `<= m`), so the bound still holds;
- a string in a numeric leaf is read as the number it spells, and a number in a timestamp leaf as
  that many units, as the line-by-line path (an Arrow cast) reads them;
- a non-finite float (`"NaN"`, `1e400`) is dropped here, as the line-by-line path drops it.

`decode(..., complete=True)` is the strict read `stats_struct.parse_stats_complete` asks for: the
struct must hold everything the JSON says (no key outside the schema, every value of its leaf's JSON
type), since the caller then drops the text and renders it from the struct. arrow-rs ignores unknown
keys and coerces strings, so its result is accepted only when counts over the document show neither
happened (else Arrow C++'s reader decides, with unknown fields an error). With no backslash in the
document a string cannot hold a `"`, so every `":` ends a key and every `":nu` starts a `null`:
- keys: `":` occurrences == the non-null values and present objects the table holds, plus the
  `":null` occurrences (an unknown key with a null value is not told apart: it says nothing);
- strings: `"` occurrences == 2 x (keys + non-null string and timestamp values). A string read as a
  number, or a number read as a timestamp, breaks the equality, as does whitespace before a colon
  (then Arrow C++'s reader decides: slower, never wrong).
A fraction read into an integer leaf is not counted: the struct then holds the truncated bound (see
above), and a later checkpoint renders that.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pj
from arro3.io import read_json

from airflow_txnlog.engine.log.bulk_memory import bulk_pool

# Output rows per arrow-rs batch: its tape stays in cache (a 32,768-row batch of stats took ~30 ms
# at 4,096 or 8,192 rows, ~55 ms at 32,768).
_BATCH_ROWS = 8_192
_QUOTE, _BACKSLASH = ord('"'), ord("\\")


def decode(doc: pa.Buffer, schema: pa.Schema, *, complete: bool, lines: pa.Array) -> pa.Table:
    """The stats objects in `doc` (the values buffer of the string array `lines`) as a table of
    `schema` (see the module docstring); raises what Arrow C++'s reader raises when neither decoder
    reads it."""
    try:
        table = pa.table(read_json(pa.BufferReader(doc), schema, batch_size=_BATCH_ROWS))
    except Exception:  # (arro3 raises its own errors; Arrow C++'s reader then decides)
        table = None
    if table is not None and (not complete or _holds_all(doc, table)):
        return _finite(table)
    longest = pc.max(pc.binary_length(lines)).as_py() or 0
    return pj.read_json(
        pa.BufferReader(doc),
        # (one block is parsed by one thread: the calling one, not a task it waits for)
        read_options=pj.ReadOptions(block_size=max(16 << 20, 2 * longest + 2), use_threads=True),
        parse_options=pj.ParseOptions(
            explicit_schema=schema,
            unexpected_field_behavior="error" if complete else "ignore",
            newlines_in_values=True,  # (objects found by parsing: no newline separates the lines)
        ),
        memory_pool=bulk_pool(),  # (jemalloc: a batch's freed working memory kept for the next)
    )


def _holds_all(doc: pa.Buffer, table: pa.Table) -> bool:
    """Do the document's key and quote counts show `table` holds every key and string of it?"""
    raw = np.frombuffer(doc, np.uint8)
    if len(raw) < 4 or bool((raw == _BACKSLASH).any()):
        return False
    keys = _occurrences(raw, b'":')
    values, strings = 0, 0
    for column in table.columns:
        for chunk in column.chunks:
            v, s = _counts(chunk)
            values, strings = values + v, strings + s
    if int(np.count_nonzero(raw == _QUOTE)) != 2 * (keys + strings):
        return False
    # (keys == values leaves no key for a null: the null count is needed only when keys exceed)
    return keys == values or keys == values + _occurrences(raw, b'":nu')


def _occurrences(raw: np.ndarray, pattern: bytes) -> int:
    """How often `pattern` (2 or 4 bytes) occurs in `raw`: each occurrence is a whole word at exactly
    one alignment, so one compare per word for each alignment counts it once (a third of the time of
    comparing shifted byte views)."""
    width = len(pattern)
    word = np.dtype(f"<u{width}").type(int.from_bytes(pattern, "little"))
    found = 0
    for start in range(width):
        words = (len(raw) - start) // width
        found += int(np.count_nonzero(raw[start : start + words * width].view(word.dtype) == word))
    return found


def _counts(arr: pa.Array) -> tuple[int, int]:
    """(non-null values and objects, non-null string-typed values) in `arr`, at every depth."""
    present = len(arr) - arr.null_count
    if pa.types.is_struct(arr.type):
        values, strings = present, 0
        for child in arr.flatten():  # (flatten: a null object's fields are null)
            v, s = _counts(child)
            values, strings = values + v, strings + s
        return values, strings
    t = arr.type
    quoted = pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_timestamp(t)
    return present, present if quoted else 0


def _finite(table: pa.Table) -> pa.Table:
    """`table` with non-finite float leaves null."""
    columns = [pa.chunked_array([_finite_array(c) for c in col.chunks], col.type) for col in table.columns]
    return pa.Table.from_arrays(columns, schema=table.schema)


def _finite_array(arr: pa.Array) -> pa.Array:
    t = arr.type
    if pa.types.is_struct(t):
        fields = [arr.field(i) for i in range(t.num_fields)]
        children = [_finite_array(f) for f in fields]
        if all(a is b for a, b in zip(children, fields, strict=True)):
            return arr
        return pa.StructArray.from_arrays(children, fields=list(t), mask=pc.invert(arr.is_valid()))
    if pa.types.is_floating(t) and not pc.all(pc.is_finite(arr)).as_py():
        return pc.if_else(pc.is_finite(arr), arr, pa.nulls(1, t)[0])
    return arr
