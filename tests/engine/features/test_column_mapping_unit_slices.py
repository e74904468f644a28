"""`rename_map_keys` on a slice of a partition-values map with nulls (the file table is chunked: a
chunk may be a slice), which `MapArray.from_arrays` refuses as it is (found by the UI suite)."""

from __future__ import annotations

import pyarrow as pa

from airflow_txnlog.engine.features.column_mapping import rename_map_keys


def test_a_sliced_map_with_nulls_is_renamed() -> None:
    t = pa.map_(pa.string(), pa.string())
    values = pa.array([[("col-1", "a")], None, [("col-1", "b"), ("x", "c")], [("col-1", "d")]], type=t)
    renamed = rename_map_keys(values.slice(1), {"col-1": "part"})
    assert renamed.to_pylist() == [None, [("part", "b"), ("x", "c")], [("part", "d")]]
    assert rename_map_keys(values, {"col-1": "part"}).to_pylist()[0] == [("part", "a")]
