"""Issue 39: seven defects of the row rules (generated pruning, identity, CHAR / VARCHAR, constraint
names), each test failing on the code before the fix. Refusals leave the table's files and
latest_version exactly as they were.

Tables "written by another engine" get their metadata from a commit written by hand, as Delta on
Spark would have written it (a `metaData` action whose schemaString / configuration carries it).
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as dt
import json
import zoneinfo
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from airflow_txnlog.engine import (
    ConstraintViolationError,
    IdentityColumn,
    InvalidArgumentError,
    Table,
    TxnLogError,
    UnsupportedFeatureError,
)
from airflow_txnlog.engine.spi import conform_rows, serialize_partition_value, write_data_files

UTC = pa.timestamp("us", tz="UTC")
NAMES = pa.schema([("name", pa.string())])


def _files(path: Path) -> list[str]:
    return sorted(str(p.relative_to(path)) for p in path.rglob("*") if p.is_file())


@contextlib.contextmanager
def _unchanged(t: Table, path: Path) -> Iterator[None]:
    """Around a refused call: nothing was written (the same files, the same latest version)."""
    version, files = t.latest_version(), _files(path)
    yield
    assert (t.latest_version(), _files(path)) == (version, files)


def _commit_by_hand(t: Table, actions: list[dict[str, Any]]) -> None:
    """The next commit, written as another engine would (no commitInfo of ours)."""
    version = t.latest_version() + 1
    log = Path(t.uri) / "_delta_log" / f"{version:020d}.json"
    log.write_text("\n".join(json.dumps(a) for a in actions) + "\n")


def _with_schema_change(t: Table, column: str, **metadata: Any) -> None:
    """A foreign commit giving `column` more field metadata (`None` removes a key)."""
    wire = t.snapshot().metadata.to_wire()["metaData"]
    schema = json.loads(wire["schemaString"])
    field = next(f for f in schema["fields"] if f["name"] == column)
    for key, value in metadata.items():
        if value is None:
            field["metadata"].pop(key, None)
        else:
            field["metadata"][key] = value
    _commit_by_hand(t, [{"metaData": {**wire, "schemaString": json.dumps(schema)}}])


# ------------------------------------------------------- 1. pruning through DATE_TRUNC('MONTH', d)
def _spark_month(day: dt.date, zone: str) -> dt.datetime:
    """DATE_TRUNC('MONTH', d) as Spark computes it in session time zone `zone`: the month's first
    midnight there (the date cast to a timestamp in the zone, truncated in the zone), in UTC."""
    local = dt.datetime(day.year, day.month, 1, tzinfo=zoneinfo.ZoneInfo(zone))
    return local.astimezone(dt.UTC)


ZONES = ["UTC", "Asia/Tokyo", "Pacific/Kiritimati", "Etc/GMT+12", "America/Los_Angeles"]


@pytest.fixture
def months(tmp_path: Path) -> Table:
    """Rows of Jan..Jun 2024, each month written by a Spark writer in each zone of ZONES: one file
    per (month, zone), its partition value what that writer computed."""
    schema = pa.schema([("id", pa.int64()), ("d", pa.date32()), ("m", UTC)])
    t = Table.create(str(tmp_path / "t"), schema=schema, partition_by=["m"],
                     properties={"delta.dataSkippingNumIndexedCols": "0"},
                     generated_columns={"m": "DATE_TRUNC('MONTH', d)"})  # fmt: skip
    adds = []
    for i, (month, zone) in enumerate((m, z) for m in range(1, 7) for z in ZONES):
        day = dt.date(2024, month, 15)
        rows = pa.table({"id": [i], "d": [day], "m": pa.array([_spark_month(day, zone)], UTC)}, schema=schema)
        adds += write_data_files(t.storage, rows, ["m"], t.snapshot().properties, max_rows_per_file=10)
    with t.transaction("WRITE") as txn:
        for a in adds:
            txn.add(a)
        txn.rows_checked()  # (the rows are Spark's: its zones, not the engine's UTC)
        txn.commit()
    return t


def test_a_file_written_in_tokyo_is_kept_by_a_filter_on_the_date(months: Table) -> None:
    snap = months.snapshot()
    tokyo = serialize_partition_value(_spark_month(dt.date(2024, 3, 15), "Asia/Tokyo"), UTC, "m")
    assert tokyo == "2024-02-29 15:00:00.000000"  # (the month's first midnight in Tokyo)
    kept = {f.partition_values["m"] for f in snap.files("d = DATE '2024-03-15'")}
    assert tokyo in kept
    assert snap.to_arrow(filter="d = DATE '2024-03-15'").num_rows == len(ZONES)


def _partitions(months: set[int]) -> set[str]:
    return {
        str(serialize_partition_value(_spark_month(dt.date(2024, m, 15), zone), UTC, "m"))
        for m in months
        for zone in ZONES
    }


@pytest.mark.parametrize(
    ("where", "files", "rows"),
    [
        ("d = DATE '2024-03-15'", {3}, {3}),
        ("d >= DATE '2024-04-01'", {4, 5, 6}, {4, 5, 6}),
        ("d < DATE '2024-03-01'", {1, 2, 3}, {1, 2}),  # (strict or not, the bound's month is kept)
        ("d IN (DATE '2024-01-15', DATE '2024-06-15')", {1, 6}, {1, 6}),
    ],
)
def test_pruning_keeps_every_writer_zone_and_still_prunes(
    months: Table, where: str, files: set[int], rows: set[int]
) -> None:
    """No stats: the files are pruned by their partition values alone; every zone's file of a month
    is kept, the other months' are not."""
    snap = months.snapshot()
    assert {f.partition_values["m"] for f in snap.files(where)} == _partitions(files)
    assert {d.month for d in snap.to_arrow(filter=where).column("d").to_pylist()} == rows
    assert snap.to_arrow(filter=where).num_rows == len(rows) * len(ZONES)


# ------------------------------------------------------------------- 2. a RecordBatch is rows too
def test_a_record_batch_is_numbered_and_filled_like_a_table(tmp_path: Path) -> None:
    schema = pa.schema([("id", pa.int64()), ("name", pa.string()), ("n", pa.int32())])
    t = Table.create(str(tmp_path / "t"), schema=schema, identity_columns={"id": IdentityColumn(start=10)},
                     generated_columns={"n": "length(name)"})  # fmt: skip
    t.write(pa.RecordBatch.from_pydict({"name": ["ab", "cde"]}))
    t.write(pa.RecordBatch.from_pydict({"name": ["f"]}), mode="append")
    rows = sorted(t.snapshot().to_arrow().to_pylist(), key=lambda r: r["id"])
    assert rows == [
        {"id": 10, "name": "ab", "n": 2},
        {"id": 11, "name": "cde", "n": 3},
        {"id": 12, "name": "f", "n": 1},
    ]


def test_a_record_batch_keeps_generated_always_refusals(tmp_path: Path) -> None:
    schema = pa.schema([("id", pa.int64()), ("name", pa.string())])
    t = Table.create(str(tmp_path / "t"), schema=schema, identity_columns={"id": IdentityColumn()})
    with _unchanged(t, tmp_path / "t"), pytest.raises(ConstraintViolationError, match="GENERATED ALWAYS"):
        t.write(pa.RecordBatch.from_pydict({"id": [5], "name": ["x"]}, schema=schema))


# ------------------------------------------------------------- 3. identity and generated at once
SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string())])
BOTH = "CAST(length(name) AS BIGINT)"


def test_a_column_both_identity_and_generated_is_refused_at_create(tmp_path: Path) -> None:
    with pytest.raises(InvalidArgumentError, match="DELTA_IDENTITY_COLUMNS_WITH_GENERATED_EXPRESSION"):
        Table.create(str(tmp_path / "a"), schema=SCHEMA, identity_columns={"id": IdentityColumn()},
                     generated_columns={"id": BOTH})  # fmt: skip
    generated_by_metadata = pa.schema(
        [pa.field("id", pa.int64(), metadata={b"delta.generationExpression": json.dumps(BOTH).encode()}),
         pa.field("name", pa.string())]
    )  # fmt: skip
    with pytest.raises(InvalidArgumentError, match="'id' is both an identity column and a generated"):
        Table.create(
            str(tmp_path / "b"), schema=generated_by_metadata, identity_columns={"id": IdentityColumn()}
        )
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()


def test_a_transaction_cannot_make_an_identity_column_generated(tmp_path: Path) -> None:
    t = Table.create(str(tmp_path / "t"), schema=SCHEMA, identity_columns={"id": IdentityColumn()},
                     generated_columns={"name": "'x'"})  # fmt: skip
    meta = t.snapshot().metadata
    schema = json.loads(meta.schema_string)
    schema["fields"][0]["metadata"]["delta.generationExpression"] = BOTH
    with _unchanged(t, tmp_path / "t"), t.transaction("CHANGE COLUMN") as txn:
        txn.update_metadata(dataclasses.replace(meta, schema_string=json.dumps(schema)))
        txn.existing_rows_checked()
        with pytest.raises(InvalidArgumentError, match="both an identity column and a generated"):
            txn.commit()


def test_a_foreign_table_with_such_a_column_is_not_written(tmp_path: Path) -> None:
    t = Table.create(str(tmp_path / "t"), schema=SCHEMA, identity_columns={"id": IdentityColumn()},
                     generated_columns={"name": "'x'"})  # fmt: skip
    _with_schema_change(t, "id", **{"delta.generationExpression": BOTH})
    refused = pytest.raises(InvalidArgumentError, match="DELTA_IDENTITY_COLUMNS_WITH_GENERATED_EXPRESSION")
    with _unchanged(t, tmp_path / "t"), refused:
        t.write(pa.table({"name": ["x"]}))
    t.set_properties({"delta.appendOnly": "false"})  # (its other commits are not refused)


# -------------------------------------------------------------- 4. a high-water mark off the grid
@pytest.mark.parametrize(
    ("start", "step", "mark", "ids"),
    [
        (1, 5, 7, [11, 16]),  # 1, 6, 11: the first value past 7
        (-1, -5, -7, [-16, -11]),  # -1, -6, -11: the first value below -7
    ],
)
def test_values_past_an_off_grid_mark_stay_on_the_grid(
    tmp_path: Path, start: int, step: int, mark: int, ids: list[int]
) -> None:
    t = Table.create(str(tmp_path / "t"), schema=SCHEMA,
                     identity_columns={"id": IdentityColumn(start=start, step=step)})  # fmt: skip
    _with_schema_change(t, "id", **{"delta.identity.highWaterMark": mark})
    t.write(pa.table({"name": ["a", "b"]}))
    assert sorted(t.snapshot().to_arrow().column("id").to_pylist()) == ids
    fields = json.loads(t.snapshot().metadata.schema_string)["fields"]
    assert fields[0]["metadata"]["delta.identity.highWaterMark"] == ids[-1 if step > 0 else 0]


# ---------------------------------------------------------------------------- 5. identity step 0
@pytest.mark.parametrize("always", [True, False])
def test_identity_step_0_refuses_writes_naming_the_column(tmp_path: Path, always: bool) -> None:
    t = Table.create(str(tmp_path / "t"), schema=SCHEMA,
                     identity_columns={"id": IdentityColumn(always=always)})  # fmt: skip
    t.write(pa.table({"name": ["a"]}))
    _with_schema_change(t, "id", **{"delta.identity.step": 0})
    rows = pa.table({"name": ["b"]}) if always else pa.table({"id": [7], "name": ["b"]})
    refused = pytest.raises(TxnLogError, match=r"identity column 'id' has step 0.*ILLEGAL_STEP")
    with _unchanged(t, tmp_path / "t"), refused:
        t.write(rows)
    assert Table.open(str(tmp_path / "t")).snapshot().to_arrow().to_pylist() == [{"id": 1, "name": "a"}]


# -------------------------------------------------------------------------- 6. CHAR and VARCHAR
def _typed(name: str, t: pa.DataType, declared: str) -> pa.Field:
    return pa.field(name, t, metadata={b"__CHAR_VARCHAR_TYPE_STRING": json.dumps(declared).encode()})


CV = pa.schema(
    [
        pa.field("id", pa.int64()),
        _typed("v", pa.string(), "varchar(3)"),
        _typed("c", pa.string(), "char(5)"),
        _typed("tags", pa.list_(pa.string()), "array<char(2)>"),
        _typed("s", pa.struct([("a", pa.string()), ("b", pa.int32())]), "struct<a:varchar(2),b:int>"),
        _typed("kv", pa.map_(pa.string(), pa.string()), "map<string,varchar(1)>"),
    ]
)


def _cv_rows(**columns: list[Any]) -> pa.Table:
    n = len(next(iter(columns.values())))
    base: dict[str, list[Any]] = {"id": list(range(n)), "v": [None] * n, "c": [None] * n, "tags": [None] * n,
                                  "s": [None] * n, "kv": [None] * n}  # fmt: skip
    return pa.table({**base, **columns}, schema=CV)


def test_char_and_varchar_values_are_trimmed_and_padded_as_spark_writes_them(tmp_path: Path) -> None:
    t = Table.create(str(tmp_path / "t"), schema=CV)
    t.write(
        _cv_rows(
            v=["ab", "abc  ", "ab   ", "é🙂x", None],
            c=["x", "abcde   ", "", None, "a b"],
            tags=[["a", None, "ab "], [], None, ["  "], ["b"]],
            s=[{"a": "x", "b": 1}, {"a": "ab  ", "b": 2}, None, {"a": None, "b": 3}, {"a": "", "b": 4}],
            kv=[[("k", "v ")], [("long key", "w")], None, [], [("z", None)]],
        )
    )
    rows = sorted(t.snapshot().to_arrow().to_pylist(), key=lambda r: r["id"])
    assert [r["v"] for r in rows] == ["ab", "abc", "ab ", "é🙂x", None]  # (only the excess spaces go)
    assert [r["c"] for r in rows] == ["x    ", "abcde", "     ", None, "a b  "]
    assert [r["tags"] for r in rows] == [["a ", None, "ab"], [], None, ["  "], ["b "]]
    assert [r["s"] for r in rows] == [{"a": "x", "b": 1}, {"a": "ab", "b": 2}, None, {"a": None, "b": 3},
                                      {"a": "", "b": 4}]  # fmt: skip
    assert [r["kv"] for r in rows] == [[("k", "v")], [("long key", "w")], None, [], [("z", None)]]
    # the data source's rows (conform_rows) keep the same rule
    assert conform_rows(_cv_rows(c=["x"]), t.snapshot().schema, {}).column("c").to_pylist() == ["x    "]


@pytest.mark.parametrize(
    ("columns", "message"),
    [
        ({"v": ["abcd"]}, "column v is VARCHAR\\(3\\): 1 value is longer than 3 characters"),
        ({"v": ["ab c"]}, "VARCHAR\\(3\\)"),  # (an excess that is not all spaces)
        ({"v": ["é🙂xy"]}, "VARCHAR\\(3\\)"),  # (characters, not bytes)
        ({"c": ["abcdef", "ok", "abcdefg"]}, "column c is CHAR\\(5\\): 2 values are longer"),
        ({"tags": [["abc"]]}, "column tags.element is CHAR\\(2\\)"),
        ({"s": [{"a": "abc", "b": 1}]}, "column s.a is VARCHAR\\(2\\)"),
        ({"kv": [[("k", "vv")]]}, "column kv.value is VARCHAR\\(1\\)"),
    ],
)
def test_a_value_too_long_fails_the_write(
    tmp_path: Path, columns: dict[str, list[Any]], message: str
) -> None:
    t = Table.create(str(tmp_path / "t"), schema=CV)
    with _unchanged(t, tmp_path / "t"):
        with pytest.raises(ConstraintViolationError, match=message) as caught:
            t.write(_cv_rows(**columns))
        assert caught.value.constraint == "__CHAR_VARCHAR_STRING_LENGTH_CHECK__"
        assert "EXCEED_LIMIT_LENGTH" in str(caught.value)


def test_a_spark_written_varchar_table_is_enforced_and_read_unchanged(tmp_path: Path) -> None:
    """The type string on a table another engine made: the next commit carries it, as Spark's
    CREATE TABLE (v VARCHAR(3)) writes it; values already there read as stored."""
    t = Table.create(str(tmp_path / "t"), schema=pa.schema([("v", pa.string())]))
    t.write(pa.table({"v": ["long value"]}))
    _with_schema_change(t, "v", __CHAR_VARCHAR_TYPE_STRING="varchar(3)")
    with _unchanged(t, tmp_path / "t"), pytest.raises(ConstraintViolationError, match="VARCHAR"):
        t.write(pa.table({"v": ["four"]}))
    t.write(pa.table({"v": ["ok "]}))
    assert sorted(t.snapshot().to_arrow().column("v").to_pylist()) == ["long value", "ok "]


def test_a_type_string_the_engine_cannot_read_is_refused_at_create(tmp_path: Path) -> None:
    bad = pa.schema([_typed("v", pa.string(), "varchar(three)")])
    with pytest.raises(UnsupportedFeatureError, match="cannot read"):
        Table.create(str(tmp_path / "a"), schema=bad)
    misfit = pa.schema([_typed("v", pa.int64(), "char(2)")])
    with pytest.raises(UnsupportedFeatureError, match="does not fit"):
        Table.create(str(tmp_path / "b"), schema=misfit)
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()


# ------------------------------------------------------------------------- 7. constraint names
def _spark_constrained(tmp_path: Path) -> Table:
    """`ALTER TABLE t ADD CONSTRAINT `my-check` CHECK (amount > 0)` as Delta on Spark commits it."""
    t = Table.create(str(tmp_path / "t"), schema=pa.schema([("amount", pa.float64())]))
    wire = t.snapshot().metadata.to_wire()["metaData"]
    conf = {**wire["configuration"], "delta.constraints.my-check": "amount > 0"}
    _commit_by_hand(
        t,
        [
            {"protocol": {"minReaderVersion": 1, "minWriterVersion": 3}},
            {"metaData": {**wire, "configuration": conf}},
        ],
    )
    return t


def test_a_constraint_spark_named_with_a_dash_is_enforced_and_dropped(tmp_path: Path) -> None:
    t = _spark_constrained(tmp_path)
    assert t.constraints() == {"my-check": "amount > 0"}
    with pytest.raises(ConstraintViolationError, match="my-check"):
        t.write(pa.table({"amount": [-1.0]}))
    version = t.drop_constraint("My-Check")  # (matched ignoring case, as Delta does)
    assert version == t.latest_version() and t.constraints() == {}
    t.write(pa.table({"amount": [-1.0]}))


@pytest.mark.parametrize("name", ["my-check", "with space", "a.b", "1st", "ünïcode"])
def test_add_constraint_takes_any_name_delta_takes(tmp_path: Path, name: str) -> None:
    t = Table.create(str(tmp_path / "t"), schema=pa.schema([("amount", pa.float64())]))
    t.add_constraint(name, "amount > 0")
    assert t.snapshot().metadata.configuration == {f"delta.constraints.{name.lower()}": "amount > 0"}
    assert t.drop_constraint(name.upper()) == t.latest_version()


@pytest.mark.parametrize(
    ("name", "message"),
    [("__CHAR_VARCHAR_STRING_LENGTH_CHECK__", "is reserved"), ("", "non-empty"), (7, "non-empty string")],
)
def test_names_delta_refuses_are_refused_and_nothing_is_written(
    tmp_path: Path, name: Any, message: str
) -> None:
    t = Table.create(str(tmp_path / "t"), schema=pa.schema([("amount", pa.float64())]))
    with _unchanged(t, tmp_path / "t"):
        with pytest.raises(InvalidArgumentError, match=message):
            t.add_constraint(name, "amount > 0")
        with pytest.raises(
            InvalidArgumentError,
            match=message if name != "__CHAR_VARCHAR_STRING_LENGTH_CHECK__" else "no constraint",
        ):
            t.drop_constraint(name)
