"""Space-filling-curve keys for Z-order and Hilbert clustering: one unsigned 64-bit key per row.

    boundaries(sample, b)   per column: the sorted cut points splitting a sample of its non-null
                            values into 2**b equally frequent ranges (duplicates collapse ranges)
    ranks(values, cuts)     per row: the number of cut points <= its value (0 .. len(cuts)); a
                            null ranks 0 (nulls first, as Delta's range ids put them); NaN ranks last
    zorder_keys(ranks, b)   the ranks' bits interleaved from the most significant down (Morton order)
    hilbert_keys(ranks, b)  the Hilbert index of the point (Skilling's "transpose" algorithm, 2004,
                            vectorised over rows), so that consecutive keys are neighbouring cells
    layout_keys(...)        one of the two (a single column: its rank; the plain sort Delta uses)

Ranking by frequency, not value, is what Delta's `range_partition_id` does too: a skewed column
still spreads over all of its bits, so every key column gets the same say in the order. b, the bits
per column, is 10 (1,024 ranges, about Delta's default of 1,000 range ids) for two or more columns
(fewer above 6 columns, so the key always fits in 64 bits) and 16 for one (its rank is the sort).

Invariant: the key of a row depends only on its own values and the cut points, never on which other
rows are in the batch; so keys computed batch by batch (Spark's mapInArrow, one file at a time) sort
the same as keys computed over all rows at once, as long as the cut points are shared.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from airflow_txnlog.engine.errors import InvalidArgumentError

CURVES = ("zorder", "hilbert")
MAX_BITS = 10
ONE_COLUMN_BITS = 16
SAMPLE_ROWS = 1_000_000  # values a column's cut points are drawn from (a uniform random sample)


def bits_per_column(columns: int) -> int:
    if not 1 <= columns <= 64:
        raise InvalidArgumentError(f"a layout key takes 1 to 64 columns, got {columns}")
    return ONE_COLUMN_BITS if columns == 1 else min(MAX_BITS, 64 // columns)


def _numeric(t: pa.DataType) -> bool:
    return bool(pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_temporal(t))


def _plain(values: pa.Array | pa.ChunkedArray) -> pa.Array:
    """One array; dictionaries decoded (their order is the values', not the codes')."""
    arr = values.combine_chunks() if isinstance(values, pa.ChunkedArray) else values
    if pa.types.is_dictionary(arr.type):
        arr = arr.dictionary_decode()
    return arr


def sample(values: pa.Array | pa.ChunkedArray, rows: int = SAMPLE_ROWS, seed: int = 0) -> pa.Array:
    """At most `rows` of the non-null values, drawn uniformly (seeded: the same data, the same cuts)."""
    arr = _plain(values).drop_null()
    if len(arr) <= rows:
        return arr
    picks = np.random.default_rng(seed).integers(0, len(arr), size=rows)  # (with replacement: cheap)
    return arr.take(pa.array(picks))


def boundaries(values: pa.Array | pa.ChunkedArray, bits: int) -> pa.Array:
    """The cut points of a column's values (see the module docstring); NaNs never become one."""
    arr = _plain(values).drop_null()
    if pa.types.is_floating(arr.type):
        arr = arr.filter(pc.invert(pc.is_nan(arr)))
    if len(arr) == 0:
        return arr
    ordered = arr.take(pc.sort_indices(arr))
    ranges = 1 << bits
    at = np.unique(np.arange(1, ranges, dtype=np.int64) * len(ordered) // ranges)
    return pc.unique(ordered.take(pa.array(at[at < len(ordered)])))


def ranks(values: pa.Array | pa.ChunkedArray, cuts: pa.Array) -> np.ndarray:
    """Per row, how many cut points are <= its value (uint64); nulls 0."""
    arr = _plain(values)
    if len(cuts) == 0:
        return np.zeros(len(arr), dtype=np.uint64)
    if arr.type != cuts.type:
        arr = arr.cast(cuts.type)
    if _numeric(arr.type):  # searchsorted in C over numpy's form (datetime64 for temporal types)
        raw = np.asarray(pc.fill_null(arr, cuts[0]).to_numpy(zero_copy_only=False))
        found = np.searchsorted(np.asarray(cuts.to_numpy(zero_copy_only=False)), raw, side="right")
        found = found.astype(np.uint64)
    else:
        found = _ranks_by_sorting(arr, cuts)
    if arr.null_count:
        found[np.asarray(arr.is_null().to_numpy(zero_copy_only=False))] = 0
    return found


def _ranks_by_sorting(arr: pa.Array, cuts: pa.Array) -> np.ndarray:
    """Any orderable type (strings, decimals, binary): #cuts <= v is v's rank among the cuts and the
    values together minus its rank among the values alone (ties ranked last: `max`)."""
    both = pa.concat_arrays([cuts, arr])
    among_both = np.asarray(pc.rank(both, tiebreaker="max").to_numpy())[len(cuts) :]
    among_values = np.asarray(pc.rank(arr, tiebreaker="max").to_numpy())
    out: np.ndarray = (among_both - among_values).astype(np.uint64)
    return out


def _spread_table(bits: int, stride: int) -> np.ndarray:
    """For every `bits`-bit value, its bits moved `stride` apart (bit i to bit i * stride)."""
    values = np.arange(1 << bits, dtype=np.uint64)
    out = np.zeros_like(values)
    for i in range(bits):
        out |= ((values >> np.uint64(i)) & np.uint64(1)) << np.uint64(i * stride)
    return out


def zorder_keys(columns: Sequence[np.ndarray], bits: int) -> np.ndarray:
    """Morton keys: bit `bits-1` of every column first (column order), then the next bit down;
    each column's bits spread by a lookup table, then shifted into their lane."""
    n = len(columns)
    table = _spread_table(bits, n)
    key = np.zeros(len(columns[0]), dtype=np.uint64)
    for d, col in enumerate(columns):
        key |= table[col.astype(np.intp, copy=False)] << np.uint64(n - 1 - d)
    return key


def hilbert_keys(columns: Sequence[np.ndarray], bits: int) -> np.ndarray:
    """Hilbert indexes (Skilling, "Programming the Hilbert curve", AIP 2004): the coordinates are
    turned into the curve's transposed form in place, whose bits interleaved are the index."""
    x = [np.array(c, dtype=np.uint64, copy=True) for c in columns]
    n = len(x)
    q = 1 << (bits - 1)
    while q > 1:  # undo the excess work of the Gray code, level by level
        p = np.uint64(q - 1)
        for i in range(n):
            high = (x[i] & np.uint64(q)) != 0
            x[0] = np.where(high, x[0] ^ p, x[0])  # invert the low bits of x[0]
            t = np.where(high, np.uint64(0), (x[0] ^ x[i]) & p)  # or exchange them with x[i]'s
            x[0] ^= t
            x[i] ^= t
        q >>= 1
    for i in range(1, n):  # Gray encode
        x[i] ^= x[i - 1]
    t = np.zeros_like(x[0])
    q = 1 << (bits - 1)
    while q > 1:
        t = np.where((x[n - 1] & np.uint64(q)) != 0, t ^ np.uint64(q - 1), t)
        q >>= 1
    for i in range(n):
        x[i] ^= t
    return zorder_keys(x, bits)


def layout_keys(
    data: pa.Table,
    columns: Sequence[str],
    curve: str,
    cuts: Sequence[pa.Array] | None = None,
    *,
    signed: bool = False,
) -> np.ndarray:
    """The key of every row of `data` over `columns` (cut points from `data` itself if not given).
    `signed`: as int64 with the top bit flipped, which sorts as the unsigned key does (for engines
    without unsigned 64-bit integers, e.g. Spark's LongType)."""
    keys = _keys(data, columns, curve, cuts)
    return (keys ^ np.uint64(1 << 63)).view(np.int64) if signed else keys


def _keys(data: pa.Table, columns: Sequence[str], curve: str, cuts: Sequence[pa.Array] | None) -> np.ndarray:
    if curve not in CURVES:
        raise InvalidArgumentError(f"curve must be one of {CURVES}, got {curve!r}")
    bits = bits_per_column(len(columns))
    if cuts is None:
        cuts = [boundaries(sample(data.column(c)), bits) for c in columns]
    ranked = [ranks(data.column(c), k) for c, k in zip(columns, cuts, strict=True)]
    if len(ranked) == 1:
        return ranked[0]
    return zorder_keys(ranked, bits) if curve == "zorder" else hilbert_keys(ranked, bits)
