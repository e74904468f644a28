"""`Snapshot.add_actions()` against delta-rs's `get_add_actions(flatten=True)` on the same tables
(written by delta-rs and by this engine; partitioned and not; checkpoint with `stats_parsed` plus a
JSON tail; nested struct stats). Documented differences, and only those, are allowed:

- ours has an extra `data_change` column (after `modification_time`);
- `path` is the decoded file path (as `files()` / `file_paths()`), delta-rs gives the log's
  percent-encoded form;
- no `min.<c>` / `max.<c>` for boolean columns (this engine's stats struct leaves them out, and
  data skipping does not use them).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import decimal
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import pyarrow as pa
import pytest
from deltalake import DeltaTable, write_deltalake

from airflow_txnlog.engine import AddFile, Table
from airflow_txnlog.engine.log.stats_struct import parse_stats_exact
from airflow_txnlog.engine.sql.predicates import may_match, parse_predicate
from airflow_txnlog.engine.state.add_actions import NUM_RECORDS_ONLY, _parse

NESTED = pa.struct([("x", pa.int64()), ("y", pa.string())])
UTC = dt.UTC


def _rich(offset: int) -> pa.Table:
    return pa.table(
        {
            "i": pa.array([1 + offset, 2 + offset, None], pa.int32()),
            "f": pa.array([1.5 + offset, -0.0, None], pa.float32()),
            "s": pa.array(["a", "b c", None]),
            "d": pa.array([dt.date(2020, 1, 1 + offset), None, dt.date(2021, 1, 1)]),
            "ts": pa.array(
                [dt.datetime(2020, 1, 1, 1, 2, 3, 456789, tzinfo=UTC), None, None], pa.timestamp("us", "UTC")
            ),
            "dec": pa.array([decimal.Decimal("1.25"), None, decimal.Decimal(offset)], pa.decimal128(10, 2)),
            "st": pa.array([{"x": offset, "y": "q"}, None, {"x": 3, "y": None}], NESTED),
            "b": pa.array([True, False, None]),
            "pd": pa.array([dt.date(2020, 1, 1 + offset % 2)] * 3),
            "pi": pa.array([None, 5, offset], pa.int64()),
        }
    )


def _compare(path: str, *, booleans: tuple[str, ...] = ()) -> pa.Table:
    snap = Table.open(path).snapshot()
    ours = snap.add_actions().sort_by("path")
    theirs = pa.table(DeltaTable(path).get_add_actions(flatten=True))
    theirs = theirs.set_column(0, "path", pa.array([unquote(p) for p in theirs.column("path").to_pylist()]))
    theirs = theirs.sort_by("path")
    skipped = {f"{m}.{b}" for b in booleans for m in ("min", "max")}
    assert set(ours.column_names) - set(theirs.column_names) == {"data_change"}
    assert set(theirs.column_names) - set(ours.column_names) == skipped
    assert [c for c in ours.column_names if c != "data_change"] == [
        c for c in theirs.column_names if c not in skipped
    ]
    for name in theirs.column_names:
        if name in skipped:
            continue
        assert ours.schema.field(name).type == theirs.schema.field(name).type, name
        assert ours.column(name).to_pylist() == theirs.column(name).to_pylist(), name
    by_path = {f.path: f.data_change for f in snap.files()}
    assert ours.column("data_change").to_pylist() == [by_path[p] for p in ours.column("path").to_pylist()]
    return ours


def _semantic(files: list[AddFile]) -> list[tuple[AddFile, Any]]:
    return [(dataclasses.replace(f, stats=None), f.parsed_stats(exact_decimals=True)) for f in files]


def _agrees_with_reference(path: str, predicates: list[str]) -> None:
    snap = Table.open(path).snapshot()
    for text in predicates:
        fresh = Table.open(path).snapshot().files(text)  # AddFiles built for the selected rows only
        pred = parse_predicate(text, snap.schema)
        expected = [f for f in snap.files() if may_match(pred.tree, snap.file_ranges(f, pred.columns))]
        # (a few checkpoint rows get their JSON stats rendered from stats_parsed: the same numbers,
        # possibly other text, e.g. -0 for -0.0)
        assert _semantic(fresh) == _semantic(expected), text
        assert snap.files(text) == expected, text
        expected = [f.path for f in expected]
        assert snap.add_actions(text).column("path").to_pylist() == expected, text


def test_deltars_table_json_only_partitioned_nested(tmp_path: Path) -> None:
    p = str(tmp_path / "t")
    for k in range(3):
        write_deltalake(p, _rich(k), partition_by=["pd", "pi"], mode="append")
    ours = _compare(p, booleans=("b",))
    assert ours.num_rows == 9 and "min.st.x" in ours.column_names and "partition.pd" in ours.column_names
    assert ours.schema.field("partition.pd").type == pa.date32()
    assert None in ours.column("partition.pi").to_pylist()  # the hive null partition
    _agrees_with_reference(p, ["pi = 5", "pi IS NULL", "i > 2", "d < DATE '2020-01-02'", "NOT (s = 'a')"])


def test_deltars_checkpoint_with_stats_parsed_and_json_tail(tmp_path: Path) -> None:
    p = str(tmp_path / "t")
    conf = {"delta.checkpoint.writeStatsAsStruct": "true", "delta.checkpoint.writeStatsAsJson": "false"}
    write_deltalake(p, _rich(0), partition_by=["pi"], configuration=conf)
    write_deltalake(p, _rich(1), mode="append")
    DeltaTable(p).create_checkpoint()
    write_deltalake(p, _rich(2), mode="append")
    snap = Table.open(p).snapshot()
    assert snap.checkpoint_version == 1
    ours = _compare(p, booleans=("b",))
    # Stats of checkpointed files come from stats_parsed only (the checkpoint has no JSON stats).
    assert None not in ours.column("num_records").to_pylist()
    _agrees_with_reference(p, ["i >= 3", "i = 1 OR dec = 2", "ts > TIMESTAMP '2020-01-01 01:02:03.456'"])


@pytest.mark.parametrize("as_struct", [False, True])
def test_engine_table_with_checkpoint_and_tail(tmp_path: Path, as_struct: bool) -> None:
    p = str(tmp_path / "t")
    props = (
        {"delta.checkpoint.writeStatsAsStruct": "true", "delta.checkpoint.writeStatsAsJson": "false"}
        if as_struct
        else {}
    )
    schema = _rich(0).schema
    t = Table.create(p, schema=schema, partition_by=["pd"], properties=props)
    for k in range(12):  # a checkpoint at version 10, then a JSON tail
        t.write(_rich(k))
    assert Table.open(p).snapshot().checkpoint_version == 10
    ours = _compare(p, booleans=("b",))
    assert ours.num_rows == 12
    _agrees_with_reference(p, ["i < 4", "st IS NULL", "f != 1.5", "pd = DATE '2020-01-02' AND i > 10"])


def test_unpartitioned_table(tmp_path: Path) -> None:
    p = str(tmp_path / "t")
    data = pa.table({"id": pa.array(range(10), pa.int64()), "name": [f"n{i}" for i in range(10)]})
    write_deltalake(p, data.slice(0, 5))
    write_deltalake(p, data.slice(5), mode="append")
    ours = _compare(p)
    assert not [c for c in ours.column_names if c.startswith("partition.")]
    assert sorted(ours.column("min.id").to_pylist()) == [0, 5]
    _agrees_with_reference(p, ["id >= 5", "name = 'n3'", "id IN (1, 7)"])


def test_add_actions_is_cached_and_filtered(tmp_path: Path) -> None:
    p = str(tmp_path / "t")
    write_deltalake(p, pa.table({"id": [1, 2]}))
    write_deltalake(p, pa.table({"id": [10, 20]}), mode="append")
    snap = Table.open(p).snapshot()
    assert snap.add_actions() is snap.add_actions()
    assert snap.add_actions("id > 5").column("min.id").to_pylist() == [10]


def test_empty_table_and_struct_null_check(tmp_path: Path) -> None:
    t = Table.create(
        str(tmp_path / "e"), schema=pa.schema([("id", pa.int64()), ("p", pa.string())]), partition_by=["p"]
    )
    snap = t.snapshot()
    assert snap.add_actions().column_names == [
        "path", "size_bytes", "modification_time", "data_change", "num_records",
        "null_count.id", "min.id", "max.id", "partition.p",
    ]  # fmt: skip
    assert snap.files("id > 1 AND p = 'a'") == [] and snap.add_actions("p IS NULL").num_rows == 0
    # A struct column's null counts are per leaf: `st IS NULL` cannot prune (it used to raise TypeError).
    p = str(tmp_path / "s")
    write_deltalake(p, _rich(0))
    assert len(Table.open(p).snapshot().files("st IS NULL")) == 1


def test_num_records_alone_is_read_without_a_json_parse_where_it_leads_and_exactly_elsewhere() -> None:
    texts = [
        '{"numRecords":12,"minValues":{"a":1}}',  # every writer's order: the fast path
        '{"numRecords":7}',
        '{"minValues":{"numRecords":99},"numRecords":3}',  # a column named numRecords first
        '{ "numRecords": 5 }',  # whitespace
        '{"minValues":{"numRecords":99}}',  # no numRecords: null, not the column's 99
        '{"numRecords":123456789012345678}',
        None,
        "",
    ]
    text = pa.array(texts, pa.string())
    got = _parse(text, NUM_RECORDS_ONLY).field("numRecords").to_pylist()
    assert got == [12, 7, 3, 5, None, 123456789012345678, None, None]
    assert got == parse_stats_exact(text, NUM_RECORDS_ONLY).field("numRecords").to_pylist()


@pytest.mark.parametrize("as_struct", ["true", "false"])
def test_the_file_summary_reads_num_records_without_keeping_the_stats_text(
    tmp_path: Path, as_struct: str
) -> None:
    t = Table.create(
        str(tmp_path / "t"),
        schema=pa.schema([("id", pa.int64()), ("p", pa.string())]),
        partition_by=["p"],
        properties={"delta.checkpoint.writeStatsAsStruct": as_struct},
    )
    for i in range(4):
        t.write(pa.table({"id": list(range(i + 1)), "p": [f"p{i % 2}"] * (i + 1)}))
    t.checkpoint()
    t.write(pa.table({"id": [9, 9, 9, 9, 9], "p": ["p0"] * 5}))  # (a tail commit after it)
    snap = Table.open(t.uri).snapshot()
    summary = snap.file_summary()
    source = snap.state.source
    assert source is not None
    if as_struct == "false":  # (the text is never kept beside stats_parsed anyway)
        assert ("add", "stats") not in source._cache  # read in batches, not kept
    assert sorted(summary.column("num_records").to_pylist()) == [1, 2, 3, 4, 5]
    assert summary.equals(snap.add_actions().select(summary.column_names))


def _json_only_table(tmp_path: Path, stats: list[str]) -> Table:
    """A table whose checkpoint has JSON stats only (no `stats_parsed`), one file per `stats`."""
    t = Table.create(
        str(tmp_path / "t"),
        schema=pa.schema([("id", pa.int64()), ("ts", pa.timestamp("us", "UTC")), ("p", pa.string())]),
        partition_by=["p"],
        properties={"delta.checkpoint.writeStatsAsStruct": "false"},
    )
    with t.transaction() as txn:
        for i, text in enumerate(stats):
            txn.add(
                AddFile(
                    path=f"p=a/f{i}.parquet",
                    partition_values={"p": "a"},
                    size=10,
                    modification_time=1,
                    stats=text,
                )
            )
        txn.commit()
    t.checkpoint()
    return t


def test_after_add_actions_the_json_stats_are_not_kept_but_rendered_from_the_struct(tmp_path: Path) -> None:
    """A checkpoint with JSON stats only: `add_actions()` parses them and keeps no copy of the
    text where the struct holds all of it; `AddFile`s made later render it from the struct (the
    same stats, as a checkpoint's `stats_parsed` renders); a key the struct lacks keeps the text."""
    complete = (
        '{"numRecords":2,"minValues":{"id":1,"ts":"2024-01-02T03:04:05.006Z"},"nullCount":{"id":0,"ts":1}}'
    )
    spaced = '{ "numRecords": 3, "maxValues": {"id": 9} }'
    t = _json_only_table(tmp_path, [complete, spaced, complete, complete])
    snap = Table.open(t.uri).snapshot()
    assert snap.add_actions().column("num_records").to_pylist() == [2, 3, 2, 2]
    source = snap.state.source
    assert source is not None
    assert all(b is None for b, _ in source._packed[("add", "stats")])  # nothing kept of the text
    # (a few files at a time: taken from what `add_actions` kept, not read from the checkpoint)
    assert snap.files_at([0])[0].stats == complete  # (already in its rendered form)
    assert snap.files_at([1])[0].stats == '{"numRecords":3,"maxValues":{"id":9}}'
    assert [f.stats for f in snap.files()] == [complete, spaced, complete, complete]  # (read whole)

    other = '{"numRecords":4,"minValues":{"id":1,"gone":7},"tightBounds":true}'
    t2 = _json_only_table(tmp_path / "b", [complete, other, complete, complete])
    snap2 = Table.open(t2.uri).snapshot()
    snap2.add_actions()
    assert snap2.state.source is not None
    assert all(b is not None for b, _ in snap2.state.source._packed[("add", "stats")])  # kept: exact
    assert [snap2.files_at([i])[0].stats for i in (0, 1)] == [complete, other]


@pytest.mark.parametrize("part_size", [None, 3])
def test_column_mapping_with_json_stats_parsed_in_several_batches(
    tmp_path: Path, part_size: int | None
) -> None:
    """Column mapping, a checkpoint with JSON stats only, its stats parsed in several batches (more
    rows than one batch, or several parts): the parsed chunks are viewed in logical names chunk by
    chunk (found by review: a chunked result had no `view`)."""
    n = 4_200 if part_size is None else 10
    schema = pa.schema([("id", pa.int64()), ("p", pa.string())])
    conf = {"delta.checkpoint.writeStatsAsStruct": "false", "delta.columnMapping.mode": "name"}
    t = Table.create(
        str(tmp_path / "t"),
        schema=schema,
        partition_by=["p"],
        properties=conf,
        checkpoint_part_size=part_size,
    )
    names = Table.open(t.uri).snapshot().column_names
    assert names is not None
    phys, part = names.physical_of("id"), names.physical_of("p")
    with t.transaction() as txn:
        for i in range(n):
            stats = f'{{"numRecords":1,"minValues":{{"{phys}":{i}}},"maxValues":{{"{phys}":{i}}}}}'
            add = AddFile(f"p=a/f{i}.parquet", partition_values={part: "a"}, size=10, modification_time=1)
            txn.add(dataclasses.replace(add, stats=stats))
        txn.commit()
    t.checkpoint()
    snap = Table.open(t.uri).snapshot()
    actions = snap.add_actions()
    by_path = dict(zip(actions.column("path").to_pylist(), actions.column("min.id").to_pylist(), strict=True))
    assert by_path == {f"p=a/f{i}.parquet": i for i in range(n)}  # (parts keep Spark's hash order)
    assert actions.column("partition.p").to_pylist() == ["a"] * n
    found = sorted(f.path for f in snap.files(filter=f"id >= {n - 2}"))
    assert found == sorted([f"p=a/f{n - 2}.parquet", f"p=a/f{n - 1}.parquet"])
