# ruff: noqa: PLC0415
"""Synthetic Delta logs for the benchmarks, written directly as commit files.

Looping ``write_deltalake`` to build a 2,000-commit table takes minutes; writing the JSON commit files
with a generator takes seconds and gives a log that any Delta reader accepts (the generated tables are
validated with delta-rs in :func:`validate_with_deltalake`). Data files are *not* written: the benchmarks
only touch metadata, and neither engine opens data files to open a table, list its files, commit an add
action or write a checkpoint.

Layout of a generated table:

* version 0: ``commitInfo`` (CREATE TABLE), ``protocol`` (reader 1 / writer 2), ``metaData`` with the
  schema ``id long, value double, name string, part string`` partitioned by ``part`` and
  ``delta.checkpointInterval`` set very high so that nobody checkpoints automatically;
* versions 1..N: ``commitInfo`` (WRITE, blind append) + ``adds_per_commit`` ``add`` actions with
  realistic paths, sizes, modification times, partition values and a ``stats`` JSON string.

Everything is deterministic for a given ``seed`` (file names, stats, timestamps).
"""

from __future__ import annotations

import os
import random
import shutil
import uuid
from dataclasses import dataclass
from pathlib import Path

import orjson

# 2026-01-01T00:00:00Z in ms; commit v is stamped BASE_TS_MS + v * COMMIT_SPACING_MS.
BASE_TS_MS = 1_767_225_600_000
COMMIT_SPACING_MS = 60_000
NUM_PARTITIONS = 100
CHECKPOINT_INTERVAL_NEVER = "1000000000"

SCHEMA_STRING = orjson.dumps(
    {
        "type": "struct",
        "fields": [
            {"name": "id", "type": "long", "nullable": True, "metadata": {}},
            {"name": "value", "type": "double", "nullable": True, "metadata": {}},
            {"name": "name", "type": "string", "nullable": True, "metadata": {}},
            {"name": "part", "type": "string", "nullable": True, "metadata": {}},
        ],
    }
).decode()
PARTITION_COLUMNS = ["part"]
TABLE_ID = "6f1d3c2a-5b4e-4f0a-9c8d-7e6b5a4f3e2d"


@dataclass(frozen=True)
class TableSpec:
    """What :func:`generate_table` writes."""

    num_commits: int  # commits after version 0 (so the latest version is num_commits)
    adds_per_commit: int = 50
    seed: int = 42

    @property
    def num_files(self) -> int:
        return self.num_commits * self.adds_per_commit


def log_dir(table: str | os.PathLike[str]) -> Path:
    return Path(table) / "_delta_log"


def commit_path(table: str | os.PathLike[str], version: int) -> Path:
    return log_dir(table) / f"{version:020d}.json"


def commit_timestamp(version: int) -> int:
    return BASE_TS_MS + version * COMMIT_SPACING_MS


def _lines(actions: list[dict]) -> bytes:
    return b"\n".join(orjson.dumps(a) for a in actions) + b"\n"


def _write_commit(table: str | os.PathLike[str], version: int, actions: list[dict]) -> None:
    path = commit_path(table, version)
    with open(path, "xb") as f:  # never overwrite an existing version
        f.write(_lines(actions))
    ts = commit_timestamp(version) / 1000.0
    os.utime(path, (ts, ts))  # file mtime = commit timestamp, as a real history would have


def version0_actions(configuration: dict[str, str] | None = None) -> list[dict]:
    config = {"delta.checkpointInterval": CHECKPOINT_INTERVAL_NEVER}
    if configuration:
        config.update(configuration)
    ts = commit_timestamp(0)
    return [
        {
            "commitInfo": {
                "timestamp": ts,
                "operation": "CREATE TABLE",
                "operationParameters": {
                    "mode": "ErrorIfExists",
                    "location": "file:/bench",
                    "protocol": '{"minReaderVersion":1,"minWriterVersion":2}',
                    "metadata": "{}",
                },
                "isolationLevel": "Serializable",
                "isBlindAppend": True,
                "operationMetrics": {},
                "engineInfo": "airflow_txnlog-benchmarks-generator",
                "clientVersion": "airflow_txnlog-benchmarks-generator",
            }
        },
        {"protocol": {"minReaderVersion": 1, "minWriterVersion": 2}},
        {
            "metaData": {
                "id": TABLE_ID,
                "name": "bench",
                "format": {"provider": "parquet", "options": {}},
                "schemaString": SCHEMA_STRING,
                "partitionColumns": PARTITION_COLUMNS,
                "createdTime": ts,
                "configuration": config,
            }
        },
    ]


def _add_action(rng: random.Random, version: int, index: int, ts: int) -> dict:
    part = f"p{rng.randrange(NUM_PARTITIONS):02d}"
    file_id = uuid.UUID(int=rng.getrandbits(128), version=4)
    num_records = rng.randint(1_000, 200_000)
    id_min = rng.randrange(0, 10**12)
    v_min = round(rng.uniform(-1e6, 0.0), 6)
    name_min = f"name_{rng.randrange(10**6):06d}"
    name_max = f"name_{rng.randrange(10**6, 10**7):07d}"
    stats = {
        "numRecords": num_records,
        "minValues": {"id": id_min, "value": v_min, "name": name_min},
        "maxValues": {
            "id": id_min + num_records * rng.randint(1, 50),
            "value": round(rng.uniform(0.0, 1e6), 6),
            "name": name_max,
        },
        "nullCount": {"id": 0, "value": rng.randrange(0, 50), "name": rng.randrange(0, 500)},
    }
    return {
        "add": {
            "path": f"part={part}/part-{index:05d}-{file_id}-c000.snappy.parquet",
            "partitionValues": {"part": part},
            "size": num_records * 12 + rng.randrange(4_096, 65_536),
            "modificationTime": ts - rng.randrange(1_000, 30_000),
            "dataChange": True,
            "stats": orjson.dumps(stats).decode(),
        }
    }


def append_actions(version: int, adds_per_commit: int, seed: int) -> list[dict]:
    """The actions of blind-append commit ``version`` (commitInfo first, as Spark writes it)."""
    rng = random.Random(seed * 1_000_003 + version)
    ts = commit_timestamp(version)
    adds = [_add_action(rng, version, i, ts) for i in range(adds_per_commit)]
    num_rows = sum(orjson.loads(a["add"]["stats"])["numRecords"] for a in adds)
    metrics = {
        "numFiles": str(adds_per_commit),
        "numOutputRows": str(num_rows),
        "numOutputBytes": str(sum(a["add"]["size"] for a in adds)),
    }
    txn_id = str(uuid.UUID(int=rng.getrandbits(128), version=4))
    return [append_commit_info(version, ts, metrics=metrics, txn_id=txn_id), *adds]


def append_commit_info(
    version: int, ts: int, *, metrics: dict[str, str] | None = None, txn_id: str | None = None
) -> dict:
    """The commitInfo of a blind append at `version` (what Spark writes, trimmed)."""
    info: dict = {
        "timestamp": ts,
        "operation": "WRITE",
        "operationParameters": {"mode": "Append", "partitionBy": "[]"},
        "readVersion": version - 1,
        "isolationLevel": "Serializable",
        "isBlindAppend": True,
    }
    if metrics is not None:
        info["operationMetrics"] = metrics
    info["engineInfo"] = "airflow_txnlog-benchmarks-generator"
    if txn_id is not None:
        info["txnId"] = txn_id
    return {"commitInfo": info}


def create_table(table: str | os.PathLike[str], configuration: dict[str, str] | None = None) -> None:
    """Write version 0 (protocol + metaData) into an empty or missing directory."""
    log_dir(table).mkdir(parents=True, exist_ok=False)
    _write_commit(table, 0, version0_actions(configuration))


def append_commits(
    table: str | os.PathLike[str], first_version: int, count: int, adds_per_commit: int = 50, seed: int = 42
) -> int:
    """Write ``count`` blind-append commits starting at ``first_version``; return the last version."""
    for v in range(first_version, first_version + count):
        _write_commit(table, v, append_actions(v, adds_per_commit, seed))
    return first_version + count - 1


def generate_table(table: str | os.PathLike[str], spec: TableSpec) -> int:
    """Create a table of ``spec.num_commits`` append commits; return its latest version."""
    create_table(table)
    if spec.num_commits == 0:
        return 0
    return append_commits(table, 1, spec.num_commits, spec.adds_per_commit, spec.seed)


def deltars_checkpoint(table: str | os.PathLike[str]) -> int:
    """Write a checkpoint of the latest version with delta-rs; return its version."""
    from deltalake import DeltaTable

    dt = DeltaTable(str(table))
    dt.create_checkpoint()
    return dt.version()


def generate_checkpointed_table(
    table: str | os.PathLike[str], spec: TableSpec, commits_after: int = 20
) -> tuple[int, int]:
    """Table of ``spec``, checkpointed by delta-rs at its last version, then ``commits_after`` more
    append commits. Returns ``(checkpoint_version, latest_version)``."""
    last = generate_table(table, spec)
    cp = deltars_checkpoint(table)
    assert cp == last, (cp, last)
    latest = append_commits(table, last + 1, commits_after, spec.adds_per_commit, spec.seed)
    return cp, latest


def copy_table(src: str | os.PathLike[str], dst: str | os.PathLike[str]) -> None:
    """Copy a table (log and any data files), preserving mtimes (= commit timestamps)."""
    shutil.copytree(src, dst, copy_function=shutil.copy2)


def validate_with_deltalake(
    table: str | os.PathLike[str], expected_version: int, expected_files: int
) -> None:
    """Open the table with delta-rs and check version, live file count, partitions and stats."""
    from deltalake import DeltaTable

    dt = DeltaTable(str(table))
    if dt.version() != expected_version:
        raise RuntimeError(f"{table}: delta-rs sees version {dt.version()}, expected {expected_version}")
    adds = dt.get_add_actions(flatten=True)
    if adds.num_rows != expected_files or len(dt.file_uris()) != expected_files:
        raise RuntimeError(f"{table}: delta-rs sees {adds.num_rows} live files, expected {expected_files}")
    if expected_files:
        for col in ("num_records", "partition.part", "min.id", "max.name", "null_count.value"):
            if col not in adds.column_names or adds.column(col).null_count:
                raise RuntimeError(f"{table}: delta-rs add actions lack column {col!r}: {adds.column_names}")
    if dt.metadata().partition_columns != PARTITION_COLUMNS:
        raise RuntimeError(f"{table}: unexpected partition columns {dt.metadata().partition_columns}")


if __name__ == "__main__":  # pragma: no cover - manual use
    import argparse
    import time

    ap = argparse.ArgumentParser(description="Generate a synthetic Delta table log.")
    ap.add_argument("path")
    ap.add_argument("--commits", type=int, default=2000)
    ap.add_argument("--adds", type=int, default=50)
    ap.add_argument(
        "--checkpoint-then", type=int, default=None, metavar="N", help="checkpoint, then N commits"
    )
    args = ap.parse_args()
    t0 = time.perf_counter()
    spec = TableSpec(args.commits, args.adds)
    if args.checkpoint_then is None:
        latest = generate_table(args.path, spec)
        files = spec.num_files
    else:
        _, latest = generate_checkpointed_table(args.path, spec, args.checkpoint_then)
        files = spec.num_files + args.checkpoint_then * args.adds
    validate_with_deltalake(args.path, latest, files)
    print(f"{args.path}: version {latest}, {files} live files, {time.perf_counter() - t0:.2f}s")
