"""Refuse on use, not on the name (issue 26, item 1; Delta Kernel's `hasKernelWriteSupport`).

When Delta moves a table from a legacy writer version (2-6) to table features (writer 7, e.g. to
turn on deletion vectors) it lists every feature the old version implied, used or not:
`invariants`, `checkConstraints`, `generatedColumns`, `identityColumns`. Such a table with no
constraint, generated or identity column anywhere is written like any other; one that uses one is
refused until the engine enforces it (CHECK constraints and invariants are enforced now:
tests/engine/features/test_constraints.py and the cases below). The logs here are built by hand, as Delta
writes them, and every write is read back by delta-rs.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from deltalake import DeltaTable

from airflow_txnlog.engine import ConstraintViolationError, Table, UnsupportedFeatureError

IMPLIED = ["appendOnly", "invariants", "checkConstraints", "generatedColumns", "identityColumns"]


def _field(name: str, kind: str = "long", **metadata: Any) -> dict[str, Any]:
    return {"name": name, "type": kind, "nullable": True, "metadata": metadata}


def _table(root: Path, protocol: dict[str, Any], fields: list[dict[str, Any]], conf: dict[str, str]) -> str:
    """Version 0 as Delta writes it: commitInfo, protocol, metaData."""
    schema = {"type": "struct", "fields": fields}
    actions = [
        {"commitInfo": {"timestamp": 1700000000000, "operation": "CREATE TABLE", "engineInfo": "hand"}},
        {"protocol": protocol},
        {
            "metaData": {
                "id": "4f5f2c1e-0000-4000-8000-000000000026",
                "format": {"provider": "parquet", "options": {}},
                "schemaString": json.dumps(schema),
                "partitionColumns": [],
                "configuration": conf,
                "createdTime": 1700000000000,
            }
        },
    ]
    log = root / "_delta_log"
    log.mkdir(parents=True)
    (log / f"{0:020d}.json").write_text("\n".join(json.dumps(a) for a in actions) + "\n")
    return str(root)


UPGRADED = {"minReaderVersion": 1, "minWriterVersion": 7, "writerFeatures": IMPLIED}


def _write_and_read_back(uri: str) -> None:
    t = Table.open(uri)
    rows = pa.table({"id": [1, 2, 3]}, schema=pa.schema([("id", pa.int64())]))
    assert t.write(rows) == 1
    assert sorted(DeltaTable(uri).to_pyarrow_table().column("id").to_pylist()) == [1, 2, 3]


def test_an_upgraded_protocol_listing_unused_features_is_written(tmp_path: Path) -> None:
    _write_and_read_back(_table(tmp_path / "t", UPGRADED, [_field("id")], {}))


@pytest.mark.parametrize("writer", [2, 3, 4, 5, 6])
def test_a_legacy_protocol_with_nothing_in_use_is_written(tmp_path: Path, writer: int) -> None:
    protocol = {"minReaderVersion": 1, "minWriterVersion": writer}
    _write_and_read_back(_table(tmp_path / "t", protocol, [_field("id")], {}))


USES = [
    (  # a nested identity field: Delta has none either
        "identityColumns",
        "column s.i",
        [
            _field("id"),
            _field("s", {"type": "struct", "fields": [_field("i", **{"delta.identity.start": 1})]}),
        ],  # type: ignore[arg-type]
        {},
    ),
    (  # a nested generated field: Delta has none, the writers here enforce only top-level ones
        "generatedColumns",
        "column s.d",
        [
            _field("id"),
            _field(
                "s",
                {
                    "type": "struct",
                    "fields": [_field("d", "date", **{"delta.generationExpression": "CAST(ts AS DATE)"})],
                },
            ),
        ],  # type: ignore[arg-type]
        {},
    ),
]


@pytest.mark.parametrize(("feature", "where", "fields", "conf"), USES, ids=[u[0] + "-" + u[1] for u in USES])
@pytest.mark.parametrize(
    "protocol", [UPGRADED, {"minReaderVersion": 1, "minWriterVersion": 6}], ids=["w7", "w6"]
)
def test_a_feature_in_use_is_refused_and_nothing_is_written(
    tmp_path: Path,
    feature: str,
    where: str,
    fields: list[dict[str, Any]],
    conf: dict[str, str],
    protocol: dict[str, Any],
) -> None:
    uri = _table(tmp_path / "t", protocol, fields, conf)
    rows = pa.table({"id": [1]}, schema=pa.schema([("id", pa.int64())]))
    t = Table.open(uri)
    with pytest.raises(UnsupportedFeatureError) as err:
        t.write(rows)
    assert err.value.feature == feature
    assert str(err.value).startswith(f"the table uses {feature} ({where}), which this engine cannot enforce")
    assert sorted(p.name for p in (tmp_path / "t" / "_delta_log").iterdir()) == [f"{0:020d}.json"]
    assert [p.name for p in (tmp_path / "t").iterdir()] == ["_delta_log"]  # no data file left behind


def test_only_real_field_metadata_counts_not_names_or_comments(tmp_path: Path) -> None:
    """The old check searched the schema JSON as text: a column comment naming the key blocked writes."""
    fields = [_field("id", comment="delta.identity.start and delta.generationExpression are not set")]
    _write_and_read_back(_table(tmp_path / "t", UPGRADED, fields, {"note": "delta.constraints.x"}))


def test_an_unknown_writer_feature_is_still_refused_by_name(tmp_path: Path) -> None:
    protocol = {**UPGRADED, "writerFeatures": [*IMPLIED, "liquid"]}
    uri = _table(tmp_path / "t", protocol, [_field("id")], {})
    with pytest.raises(UnsupportedFeatureError, match="writer feature 'liquid'"):
        Table.open(uri).write(pa.table({"id": [1]}, schema=pa.schema([("id", pa.int64())])))


ENFORCED = [
    ("checkConstraints", [_field("id")], {"delta.constraints.positive": "id > 0"}),
    ("invariants", [_field("id", **{"delta.invariants": '{"expression": {"expression": "id > 0"}}'})], {}),
]


@pytest.mark.parametrize(("feature", "fields", "conf"), ENFORCED, ids=[e[0] for e in ENFORCED])
@pytest.mark.parametrize(
    "protocol", [UPGRADED, {"minReaderVersion": 1, "minWriterVersion": 6}], ids=["w7", "w6"]
)
def test_a_constraint_or_invariant_in_use_is_enforced(
    tmp_path: Path, feature: str, fields: list[dict[str, Any]], conf: dict[str, str], protocol: dict[str, Any]
) -> None:
    """Rows that keep the rule are written (and read back by delta-rs); a breaking row is refused
    with nothing written."""
    uri = _table(tmp_path / "t", protocol, fields, conf)
    _write_and_read_back(uri)
    with pytest.raises(ConstraintViolationError, match=r"id > 0\) is violated by 1 row; one of them: id=-5"):
        Table.open(uri).write(pa.table({"id": [7, -5]}, schema=pa.schema([("id", pa.int64())])))
    assert Table.open(uri).latest_version() == 1
    assert len(DeltaTable(uri).file_uris()) == 1
    assert len(list((tmp_path / "t").glob("*.parquet"))) == 1  # the refused write left no file


@pytest.mark.parametrize(
    "protocol", [UPGRADED, {"minReaderVersion": 1, "minWriterVersion": 6}], ids=["w7", "w6"]
)
def test_a_generated_column_in_use_is_filled_and_enforced(tmp_path: Path, protocol: dict[str, Any]) -> None:
    fields = [_field("id"), _field("twice", **{"delta.generationExpression": "id * 2"})]
    uri = _table(tmp_path / "t", protocol, fields, {})
    t = Table.open(uri)
    assert t.write(pa.table({"id": [1, 2]}, schema=pa.schema([("id", pa.int64())]))) == 1
    assert sorted(DeltaTable(uri).to_pyarrow_table().column("twice").to_pylist()) == [2, 4]
    wrong = pa.table({"id": [3], "twice": [7]}, schema=pa.schema([("id", pa.int64()), ("twice", pa.int64())]))
    with pytest.raises(ConstraintViolationError, match=r"generated column twice = id \* 2"):
        t.write(wrong)
    assert t.latest_version() == 1


@pytest.mark.parametrize(
    "protocol", [UPGRADED, {"minReaderVersion": 1, "minWriterVersion": 6}], ids=["w7", "w6"]
)
def test_an_identity_column_in_use_is_numbered(tmp_path: Path, protocol: dict[str, Any]) -> None:
    fields = [_field("id", **{"delta.identity.start": 1, "delta.identity.step": 1}), _field("v")]
    uri = _table(tmp_path / "t", protocol, fields, {})
    assert Table.open(uri).write(pa.table({"v": [7, 8]}, schema=pa.schema([("v", pa.int64())]))) == 1
    assert sorted(DeltaTable(uri).to_pyarrow_table().column("id").to_pylist()) == [1, 2]
