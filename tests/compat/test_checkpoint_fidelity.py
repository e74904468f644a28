"""Checkpoints keep everything the protocol puts in them (issue 10, next to test_protocol_defects.py).

Covers what those regression tests do not: the refusal of writer features a checkpoint cannot carry,
the part split against a multi-part checkpoint written by Spark, stats that exist only in
`stats_parsed` surviving savepoints and restore, and the stats struct <-> JSON conversions.
"""

from __future__ import annotations

import datetime as dt
import decimal
import json
from pathlib import Path
from typing import Any

import deltalake
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from airflow_txnlog.engine import Table, UnsupportedFeatureError
from airflow_txnlog.engine.log.actions import Metadata
from airflow_txnlog.engine.log.spark_hash import part_of
from airflow_txnlog.engine.log.stats_struct import parse_stats, stats_parsed_type, struct_json

pytestmark = pytest.mark.compat

GOLDEN = Path(__file__).parent / "golden"
SCHEMA = {"type": "struct", "fields": [{"name": "id", "type": "long", "nullable": True, "metadata": {}}]}


def _commit(root: Path, version: int, actions: list[dict[str, Any]]) -> None:
    (root / "_delta_log").mkdir(parents=True, exist_ok=True)
    lines = "\n".join(json.dumps(a) for a in actions)
    (root / "_delta_log" / f"{version:020d}.json").write_text(lines + "\n")


def _table(root: Path, protocol: dict[str, Any], extra: list[dict[str, Any]] | None = None) -> None:
    md = {
        "id": "4c1c6b1c-0000-4000-8000-000000000002",
        "format": {"provider": "parquet", "options": {}},
        "schemaString": json.dumps(SCHEMA),
        "partitionColumns": [],
        "configuration": {},
        "createdTime": 1_700_000_000_000,
    }
    info = {"commitInfo": {"timestamp": 1_700_000_000_000, "operation": "CREATE TABLE"}}
    _commit(root, 0, [info, {"protocol": protocol}, {"metaData": md}, *(extra or [])])


@pytest.mark.parametrize(
    ("protocol", "feature"),
    [
        (
            {"minReaderVersion": 1, "minWriterVersion": 7, "writerFeatures": ["appendOnly", "futureX"]},
            "futureX",
        ),
        ({"minReaderVersion": 1, "minWriterVersion": 8}, "writerVersion8"),
    ],
)
def test_checkpoint_cleanup_and_savepoint_refuse_features_a_checkpoint_cannot_carry(
    tmp_path: Path, protocol: dict[str, Any], feature: str
) -> None:
    root = tmp_path / "t"
    _table(root, protocol)
    t = Table.open(str(root))

    def cleanup() -> object:
        return t.cleanup_log(retention_hours=0, dry_run=False)

    for call in (t.checkpoint, cleanup, lambda: t.create_savepoint("sp")):
        with pytest.raises(UnsupportedFeatureError) as exc:
            call()
        assert exc.value.feature == feature
        assert feature in str(exc.value) or "writer version 8" in str(exc.value)
    assert sorted(p.name for p in (root / "_delta_log").iterdir()) == [f"{0:020d}.json"]
    assert not (root / "_savepoints").exists()


def test_removed_domains_are_not_checkpointed(tmp_path: Path) -> None:
    root = tmp_path / "t"
    features = {"minReaderVersion": 1, "minWriterVersion": 7, "writerFeatures": ["domainMetadata"]}
    dm = {"domain": "app.x", "configuration": "{}", "removed": False}
    _table(root, features, [{"domainMetadata": dm}, {"domainMetadata": {**dm, "domain": "app.y"}}])
    _commit(root, 1, [{"domainMetadata": {**dm, "removed": True}}])
    Table.open(str(root)).checkpoint()
    ck = pq.read_table(root / "_delta_log" / f"{1:020d}.checkpoint.parquet")
    assert [r for r in ck.column("domainMetadata").to_pylist() if r] == [{**dm, "domain": "app.y"}]
    for v in (0, 1):
        (root / "_delta_log" / f"{v:020d}.json").unlink()
    assert list(Table.open(str(root)).snapshot().state.domains) == ["app.y"]


def test_parts_are_split_as_spark_splits_them() -> None:
    """A multi-part checkpoint written by Spark 3.4 / Delta 3.0: part_of reproduces its split."""
    log = GOLDEN / "multi-part-checkpoint" / "_delta_log"
    parts = sorted(log.glob("*.checkpoint.*.parquet"))
    assert len(parts) == 2
    for number, part in enumerate(parts, 1):
        table = pq.read_table(part)
        paths = [r["path"] for r in table.column("add").to_pylist() if r]
        assert paths and all(part_of(p, 2) == number for p in paths)
        if any(table.column("protocol").to_pylist()):
            assert part_of(None, 2) == number


def test_savepoint_and_restore_keep_stats_found_only_in_stats_parsed(tmp_path: Path) -> None:
    root = tmp_path / "t"
    conf = {"delta.checkpoint.writeStatsAsJson": "false", "delta.checkpoint.writeStatsAsStruct": "true"}
    for start in (0, 100):
        batch = pa.table({"id": pa.array(range(start, start + 10), pa.int64())})
        deltalake.write_deltalake(str(root), batch, mode="append", configuration=conf)
    deltalake.DeltaTable(str(root)).create_checkpoint()
    t = Table.open(str(root))
    sp = t.create_savepoint("before")
    manifest = pq.read_table(root / "_savepoints" / sp.manifest)
    adds = [r for r in manifest.column("add").to_pylist() if r]
    assert len(adds) == 2 and all(json.loads(a["stats"])["numRecords"] == 10 for a in adds)
    t.write(pa.table({"id": pa.array([7], pa.int64())}), mode="overwrite")
    for target in ({"version": 1}, {"savepoint": "before"}):
        t.restore(**target)  # type: ignore[arg-type]
        files = t.snapshot().files()
        assert len(files) == 2 and all(f.num_records == 10 for f in files)
        assert len(t.snapshot().files(filter="id > 50")) == 1
        t.write(pa.table({"id": pa.array([7], pa.int64())}), mode="overwrite")


def test_stats_struct_and_json_convert_both_ways() -> None:
    schema = {
        "type": "struct",
        "fields": [
            {"name": n, "type": ty, "nullable": True, "metadata": {}}
            for n, ty in [
                ("f", "double"),
                ("d", "date"),
                ("ts", "timestamp"),
                ("dec", "decimal(12,10)"),
                ("s", "string"),
            ]
        ],
    }
    target = stats_parsed_type(Metadata(id="x", schema_string=json.dumps(schema)))
    lines = [
        '{"numRecords":2,"minValues":{"f":"NaN","d":"2024-01-01","dec":0.5},"nullCount":{"f":0}}',  # row-wise
        None,
        "not json",
        '{"numRecords":1,"minValues":{"ts":"0999-01-01T00:00:00.123Z","s":"a\\"b\\u0001","dec":0E-10}}',
    ]
    parsed = parse_stats(pa.array(lines, pa.string()), target)
    rows = parsed.to_pylist()
    assert rows[1] is None and rows[2] is None
    assert rows[0]["minValues"]["f"] is None and rows[0]["minValues"]["d"] == dt.date(2024, 1, 1)
    assert rows[3]["minValues"]["dec"] == decimal.Decimal(0)
    text = struct_json(parsed).to_pylist()
    assert json.loads(text[0]) == {
        "numRecords": 2,
        "minValues": {"d": "2024-01-01", "dec": 0.5},
        "nullCount": {"f": 0},
    }
    assert text[1] is None and text[2] is None
    assert '"dec":0.0000000000' in text[3] and '"ts":"0999-01-01T00:00:00.123Z"' in text[3]
    assert json.loads(text[3])["minValues"]["s"] == 'a"b\x01'
