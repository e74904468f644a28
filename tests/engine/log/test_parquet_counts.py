"""`engine.log.parquet_counts`: what a checkpoint part's statistics say before a column is read."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from airflow_txnlog.engine.log import parquet_counts
from airflow_txnlog.engine.log.parquet_counts import action_rows, all_null, small_action_rows

PROTOCOL = pa.struct([("minReaderVersion", pa.int32()), ("minWriterVersion", pa.int32())])
METADATA = pa.struct([("id", pa.string()), ("partitionColumns", pa.list_(pa.string()))])
TXN = pa.struct([("appId", pa.string()), ("version", pa.int64())])
DV = pa.struct([("storageType", pa.string()), ("pathOrInlineDv", pa.string())])
ADD = pa.struct([("path", pa.string()), ("deletionVector", DV)])


def _part(path: Path, rows: list[dict[str, Any]], *, statistics: bool = True) -> pq.ParquetFile:
    """A checkpoint-like part: one action per row (the others null), in the given order."""
    schema = pa.schema([("protocol", PROTOCOL), ("metaData", METADATA), ("txn", TXN), ("add", ADD)])
    table = pa.Table.from_pylist(rows, schema=schema)
    pq.write_table(table, path, row_group_size=4, write_statistics=statistics)
    return pq.ParquetFile(path)


def _rows(first_small: bool, dv: bool = False) -> list[dict[str, Any]]:
    adds: list[dict[str, Any]] = [{"add": {"path": f"f{i}", "deletionVector": None}} for i in range(9)]
    if dv:
        adds[5]["add"]["deletionVector"] = {"storageType": "u", "pathOrInlineDv": "x"}
    small = [
        {"protocol": {"minReaderVersion": 1, "minWriterVersion": 2}},
        {"metaData": {"id": "m", "partitionColumns": ["a", "b"]}},
        {"txn": {"appId": "app", "version": 3}},
        {"txn": {"appId": "other", "version": 4}},
    ]
    return small + adds if first_small else adds + small


@pytest.mark.parametrize("first_small", [True, False])
def test_counts_and_all_null_fields_from_the_statistics(tmp_path: Path, first_small: bool) -> None:
    f = _part(tmp_path / "p.parquet", _rows(first_small))
    assert f.metadata.num_row_groups > 1
    assert action_rows(f.metadata, ["protocol", "metaData", "txn"]) == 4
    assert action_rows(f.metadata, ["add"]) is None  # (not a small action: no count)
    assert all_null(f.metadata, "add.deletionVector")
    assert not all_null(f.metadata, "add.path")
    assert not all_null(f.metadata, "metaData.partitionColumns")  # (a list: entries are no rows)
    with_dv = _part(tmp_path / "dv.parquet", _rows(first_small, dv=True))
    assert not all_null(with_dv.metadata, "add.deletionVector")


def test_without_statistics_nothing_is_claimed(tmp_path: Path) -> None:
    f = _part(tmp_path / "p.parquet", _rows(True), statistics=False)
    assert action_rows(f.metadata, ["protocol"]) is None
    assert not all_null(f.metadata, "add.deletionVector")
    rows = small_action_rows(f, ["protocol", "txn"])
    assert {k: len(v) for k, v in rows.items()} == {"protocol": 1, "txn": 2}


class _Counting(pq.ParquetFile):
    batches = 0

    def iter_batches(self, *args: Any, **kwargs: Any) -> Any:
        for batch in super().iter_batches(*args, **kwargs):
            type(self).batches += 1
            yield batch


@pytest.mark.parametrize("first_small", [True, False])
def test_small_action_rows_equal_a_whole_read_and_stop_once_all_are_found(
    tmp_path: Path, first_small: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    _part(tmp_path / "p.parquet", _rows(first_small))
    monkeypatch.setattr(parquet_counts, "_BATCH_ROWS", 2)
    _Counting.batches = 0
    columns = ["protocol", "metaData", "txn"]
    got = small_action_rows(_Counting(tmp_path / "p.parquet"), columns)
    whole = pq.read_table(tmp_path / "p.parquet", columns=columns)
    for c in columns:
        expected = whole.column(c).combine_chunks()
        assert got[c].equals(expected.filter(expected.is_valid()))
    assert _Counting.batches == (2 if first_small else 7)  # (13 rows: 7 batches of 2 in all)


def test_a_field_with_a_list_or_map_below_it_is_never_claimed_null(tmp_path: Path) -> None:
    """An empty map counts as a null leaf value in the statistics, yet the field is not null: such a
    field is never `all_null` (found by review: empty tags came back null)."""
    t = pa.struct([("path", pa.string()), ("tags", pa.map_(pa.string(), pa.string()))])
    add = pa.array([{"path": "a", "tags": []}, {"path": "b", "tags": []}, None], type=t)
    pq.write_table(pa.table({"add": add}), tmp_path / "p.parquet")
    meta = pq.ParquetFile(tmp_path / "p.parquet").metadata
    assert meta.row_group(0).column(1).statistics.null_count == 3  # (what misled it)
    assert not all_null(meta, "add.tags")
    assert not all_null(meta, "add")
