"""Type widening on read (engine.features.type_widening): the Spark-written reference tables, the protocol's
list of supported changes, data skipping that stays sound on columns widened from float, and checkpoints.

Expected rows are derived outside the engine: the version-0 row from Spark's own stats in the log
(one row per file: min = max = the value) converted as the protocol says, the version-2 row from its
parquet file, which was written after the change in the wide types."""

from __future__ import annotations

import datetime as dt
import json
import shutil
import struct
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from airflow_txnlog.engine import Table, UnsupportedFeatureError
from airflow_txnlog.engine.features.type_widening import check_supported, is_supported

GOLDEN = Path(__file__).parents[2] / "compat" / "golden"


def _v0_row() -> dict[str, Any]:
    """The version-0 file's single row, from Spark's stats, widened to the version-2 types."""
    log = (GOLDEN / "type-widening" / "_delta_log" / f"{0:020d}.json").read_text().splitlines()
    stats = next(json.loads(json.loads(line)["add"]["stats"]) for line in log if '"add"' in line)
    v = stats["minValues"]
    assert v == stats["maxValues"] and stats["numRecords"] == 1
    as_float32 = struct.unpack("f", struct.pack("f", v["float_double"]))[0]  # the column was a float
    return {
        "byte_long": v["byte_long"],
        "int_long": v["int_long"],
        "float_double": as_float32,
        **{c: float(v[c]) for c in ("byte_double", "short_double", "int_double")},
        "decimal_decimal_same_scale": Decimal(str(v["decimal_decimal_same_scale"])),
        "decimal_decimal_greater_scale": Decimal(str(v["decimal_decimal_greater_scale"])),
        **{c: Decimal(v[c]) for c in ("byte_decimal", "short_decimal", "int_decimal", "long_decimal")},
        "date_timestamp_ntz": dt.datetime.fromisoformat(v["date_timestamp_ntz"]),
    }


def test_reference_table_reads_old_files_in_the_new_types() -> None:
    snap = Table.open(str(GOLDEN / "type-widening")).snapshot()
    assert snap.schema.field("byte_long").type == pa.int64()
    assert snap.schema.field("date_timestamp_ntz").type == pa.timestamp("us")
    rows = snap.to_arrow().to_pylist()
    new_file = next(f for f in snap.files() if "cd317895" in f.path)
    v2 = pq.read_table(GOLDEN / "type-widening" / new_file.path).to_pylist()
    assert sorted(rows, key=lambda r: r["byte_long"]) == [_v0_row(), *v2]


def test_reference_table_nested_widening() -> None:
    # struct field, map key/value and array element widened from int to long (delta.typeChanges with
    # fieldPath); every value of the old file survives in the new type
    rows = Table.open(str(GOLDEN / "type-widening-nested")).snapshot().to_arrow().to_pylist()
    old = next(r for r in rows if r["struct"]["a"] == 1)
    assert old == {"struct": {"a": 1}, "map": [(2, 3)], "array": [4, 5]}


def test_pruning_never_trusts_a_float_bound_as_a_double() -> None:
    # the old file holds float 3.4 = 3.4000000953674316 as a double; its stats say "3.4"
    snap = Table.open(str(GOLDEN / "type-widening")).snapshot()
    hit = "float_double > 3.40000005 AND float_double < 3.5"
    assert snap.to_arrow(filter=hit).num_rows == 1
    assert len(snap.files(filter=hit)) == 2  # no stats used for the widened column: both kept
    assert len(snap.files(filter="byte_long > 5")) == 1  # exact widenings keep pruning


def test_checkpoint_of_a_widened_table(tmp_path: Path) -> None:
    root = tmp_path / "t"
    shutil.copytree(GOLDEN / "type-widening", root)
    before = Table.open(str(root)).snapshot().to_arrow()
    Table.open(str(root)).checkpoint()
    fresh = Table.open(str(root)).snapshot()
    assert fresh.checkpoint_version == 2
    assert fresh.to_arrow().sort_by("byte_long").equals(before.sort_by("byte_long"))
    hit = "float_double > 3.40000005 AND float_double < 3.5"
    assert fresh.to_arrow(filter=hit).num_rows == 1


@pytest.mark.parametrize(
    ("old", "new", "ok"),
    [
        ("byte", "long", True),
        ("integer", "short", False),
        ("float", "double", True),
        ("long", "double", False),
        ("date", "timestamp_ntz", True),
        ("date", "timestamp", False),
        ("decimal(10,2)", "decimal(20,5)", True),
        ("decimal(10,2)", "decimal(11,3)", True),
        ("decimal(10,2)", "decimal(11,4)", False),  # 2 more scale digits need 2 more precision
        ("integer", "decimal(11,1)", True),
        ("long", "decimal(20,1)", False),
        ("string", "binary", False),
    ],
)
def test_supported_type_changes(old: str, new: str, ok: bool) -> None:
    assert is_supported(old, new) is ok


def test_an_unsupported_change_is_refused() -> None:
    changes = json.dumps([{"fromType": "double", "toType": "float", "tableVersion": 1}])
    schema = pa.schema([pa.field("x", pa.float32(), metadata={"delta.typeChanges": changes})])
    with pytest.raises(UnsupportedFeatureError, match="'x' was widened from double to float"):
        check_supported(schema)
