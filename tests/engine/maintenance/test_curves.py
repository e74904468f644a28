"""Space-filling-curve keys (engine.maintenance.curves): Hilbert keys walk neighbouring cells,
Z-order keys match a bit-by-bit reference, ranks follow the cut points for every orderable type, and
keys computed batch by batch equal keys computed at once (what Spark's per-task keys rely on)."""

from __future__ import annotations

import datetime as dt
import decimal
import itertools

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from airflow_txnlog.engine import InvalidArgumentError
from airflow_txnlog.engine.maintenance import curves


def _grid(dims: int, bits: int) -> list[np.ndarray]:
    cells = np.array(list(itertools.product(range(1 << bits), repeat=dims)), dtype=np.uint64)
    return [cells[:, d] for d in range(dims)]


@pytest.mark.parametrize(("dims", "bits"), [(2, 1), (2, 4), (3, 3), (4, 2)])
def test_hilbert_keys_are_a_bijection_whose_consecutive_cells_are_neighbours(dims: int, bits: int) -> None:
    cols = _grid(dims, bits)
    keys = curves.hilbert_keys(cols, bits)
    assert sorted(keys.tolist()) == list(range(1 << (dims * bits)))
    walk = np.stack(cols, axis=1)[np.argsort(keys)].astype(np.int64)
    steps = np.abs(np.diff(walk, axis=0)).sum(axis=1)
    assert steps.tolist() == [1] * (len(walk) - 1)  # a Hilbert curve never jumps
    assert walk[0].tolist() == [0] * dims  # it starts at the origin


def test_zorder_keys_interleave_bits_most_significant_first() -> None:
    x, y = _grid(2, 3)
    keys = curves.zorder_keys([x, y], 3)

    def reference(a: int, b: int) -> int:
        out = 0
        for bit in (2, 1, 0):
            out = (out << 1) | ((a >> bit) & 1)
            out = (out << 1) | ((b >> bit) & 1)
        return out

    assert keys.tolist() == [reference(int(a), int(b)) for a, b in zip(x, y, strict=True)]


@pytest.mark.parametrize(
    "values",
    [
        [5, None, 1, 3, 3, 9, 7],
        [1.5, None, -2.0, float("nan"), 0.1, 8.0],
        ["pear", None, "apple", "fig", "kiwi", "apple"],
        [dt.date(2024, 1, d) for d in (5, 1, 9, 3)] + [None],
        [dt.datetime(2024, 1, 1, h, tzinfo=dt.UTC) for h in (5, 1, 9)] + [None],
        [decimal.Decimal("1.10"), None, decimal.Decimal("-3.25"), decimal.Decimal("7.00")],
    ],
    ids=["int", "float", "string", "date", "timestamp", "decimal"],
)
def test_ranks_count_the_cut_points_at_or_below_each_value(values: list[object]) -> None:
    arr = pa.array(values)
    cuts = curves.boundaries(arr, 2)
    got = curves.ranks(arr, cuts).tolist()
    cut_list = cuts.to_pylist()
    for value, rank in zip(values, got, strict=True):
        if value is None:
            assert rank == 0
        elif isinstance(value, float) and value != value:  # NaN sorts after every number
            assert rank == len(cut_list)
        else:
            assert rank == sum(1 for c in cut_list if c <= value)


def test_cut_points_split_a_column_into_equally_frequent_ranges() -> None:
    arr = pa.array(np.random.default_rng(0).exponential(size=100_000))  # heavily skewed
    ranked = curves.ranks(arr, curves.boundaries(arr, 4))
    counts = np.bincount(ranked.astype(np.int64), minlength=16)
    assert counts.min() > 100_000 / 16 * 0.9 and counts.max() < 100_000 / 16 * 1.1


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.tuples(st.integers(-50, 50), st.text(max_size=3)), min_size=2, max_size=60), st.integers(1, 5)
)
def test_keys_batch_by_batch_equal_keys_at_once(rows: list[tuple[int, str]], cut: int) -> None:
    data = pa.table({"a": [r[0] for r in rows], "b": [r[1] for r in rows]})
    bits = curves.bits_per_column(2)
    cuts = [curves.boundaries(data.column(c), bits) for c in ("a", "b")]
    whole = curves.layout_keys(data, ["a", "b"], "hilbert", cuts)
    cut = min(cut, data.num_rows - 1)
    parts = [curves.layout_keys(data.slice(0, cut), ["a", "b"], "hilbert", cuts)]
    parts.append(curves.layout_keys(data.slice(cut), ["a", "b"], "hilbert", cuts))
    assert np.concatenate(parts).tolist() == whole.tolist()


def test_one_column_is_a_plain_sort_and_bad_arguments_are_named() -> None:
    data = pa.table({"a": [3, 1, 2]})
    assert np.argsort(curves.layout_keys(data, ["a"], "hilbert"), kind="stable").tolist() == [1, 2, 0]
    with pytest.raises(InvalidArgumentError, match="curve must be one of"):
        curves.layout_keys(data, ["a"], "peano")
    with pytest.raises(InvalidArgumentError, match="1 to 64 columns"):
        curves.bits_per_column(65)
