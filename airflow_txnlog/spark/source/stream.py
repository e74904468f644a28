"""Streaming through the `txnlog` data source: `readStream.format("txnlog")` and `writeStream`.

Read. Offsets are positions in the table's history, `{"version": v, "index": i, "snapshot": s}`:
the next file to read is file `i` of version `v`, where a version's files are the `add` actions of
its commit with dataChange=true (in path order), or, while `snapshot` is true, every live file of
snapshot `v` (the table as it was when the stream started, read first, as Delta does). The end of a
version is written as the start of the next, so offsets are canonical.

    initialOffset   startingVersion absent: the snapshot of the latest version, then later commits;
                    startingVersion=N: the commits from N on; "latest": only commits after now
    latestOffset    walks files from `start` up to the latest version, at most `maxFilesPerTrigger`
                    of them when Spark passes that limit (ReadMaxFiles; Trigger.AvailableNow passes
                    ReadAllAvailable); a commit that changes no data (OPTIMIZE) is skipped; a commit
                    that removes data (DELETE, UPDATE, MERGE, overwrite) fails the stream unless
                    `skipChangeCommits=true` skips it (Delta's option and behaviour); a schema change
                    fails it (restart the query to pick the new schema up)
    partitions      the files between two offsets, packed as the batch reader packs them; read() is
                    the batch reader's

Write. Every micro-batch is written like a batch write (executors write the files), and its commit
carries the transaction id (app id, batch id): app id = `txnAppId` if given, else one derived from
`checkpointLocation`, which names a query across restarts as Delta's query id does. A batch that
Spark replays after a restart finds its id in the table, deletes the files it wrote again and
commits nothing: exactly once. Without either option the write is refused (a query without a
checkpoint cannot be exactly once across restarts).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import (
    DataSourceStreamArrowWriter,
    DataSourceStreamReader,
    InputPartition,
    WriterCommitMessage,
)
from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadLimit, ReadMaxFiles
from pyspark.sql.types import StructType

from airflow_txnlog.engine import AddFile, FileScan, InvalidArgumentError, Table, schema_from_json
from airflow_txnlog.engine.spi import without_mapping
from airflow_txnlog.spark.errors import carrying, carrying_iterator
from airflow_txnlog.spark.schemas import to_spark_schema
from airflow_txnlog.spark.source.options import (
    DEFAULT_PARTITION_BYTES,
    WriteOptions,
    _bool_option,
    _common,
    _int_option,
)
from airflow_txnlog.spark.source.reader import FilesPartition, pack
from airflow_txnlog.spark.source.writer import (
    TxnlogWriter,
    Written,
    abort_files,
    commit_write,
    delete_files,
    txn_version,
)

STREAM_READ_OPTIONS = frozenset(
    {
        "path",
        "storageoptions",
        "startingversion",
        "maxfilespertrigger",
        "skipchangecommits",
        "maxpartitionbytes",
    }
)
Offset = dict[str, Any]


@dataclass(frozen=True)
class StreamOptions:
    path: str
    starting: int | str | None  # a version, "latest", or None (snapshot first)
    max_files: int | None
    skip_change_commits: bool
    partition_bytes: int
    storage_options: dict[str, Any] = field(repr=False)

    @classmethod
    def parse(cls, options: Mapping[str, str]) -> StreamOptions:
        opts, storage = _common(options, STREAM_READ_OPTIONS, "streaming read")
        raw = opts.get("startingversion")
        starting: int | str | None = None
        if raw is not None:
            starting = (
                "latest"
                if raw.strip().lower() == "latest"
                else _int_option("startingVersion", raw, minimum=0)
            )
        return cls(
            opts["path"],
            starting,
            _int_option("maxFilesPerTrigger", opts.get("maxfilespertrigger"), minimum=1),
            _bool_option("skipChangeCommits", opts.get("skipchangecommits")),
            _int_option("maxPartitionBytes", opts.get("maxpartitionbytes"), minimum=1)
            or DEFAULT_PARTITION_BYTES,
            storage,
        )


def _key(offset: Offset) -> tuple[int, int, int]:
    return (int(offset["version"]), 0 if offset["snapshot"] else 1, int(offset["index"]))


def _next(version: int, index: int, snapshot: bool, count: int) -> Offset:
    """The offset after file `index` of a unit of `count` files."""
    if index + 1 < count:
        return {"version": version, "index": index + 1, "snapshot": snapshot}
    return {"version": version + 1, "index": 0, "snapshot": False}


class TxnlogStreamReader(DataSourceStreamReader):
    """See the module docstring."""

    def __init__(self, options: StreamOptions, schema: StructType) -> None:
        self.options = options
        self.schema_json = schema.json()
        self._table: Table | None = None

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_table": None}

    def table(self) -> Table:
        if self._table is None:
            self._table = Table.open(self.options.path, storage_options=self.options.storage_options or None)
        return self._table

    @carrying
    def initialOffset(self) -> Offset:
        latest = self.table().latest_version()
        if self.options.starting is None:
            return {"version": latest, "index": 0, "snapshot": True}
        if self.options.starting == "latest":
            return {"version": latest + 1, "index": 0, "snapshot": False}
        assert isinstance(self.options.starting, int)
        if self.options.starting > latest + 1:
            raise InvalidArgumentError(
                f"txnlog: startingVersion {self.options.starting} is after the latest {latest}"
            )
        return {"version": self.options.starting, "index": 0, "snapshot": False}

    def getDefaultReadLimit(self) -> ReadLimit:
        return ReadMaxFiles(self.options.max_files) if self.options.max_files else ReadAllAvailable()

    def _walk(self, start: Offset, last_version: int) -> Iterator[tuple[int, int, bool, AddFile, int]]:
        """(version, index, snapshot, file, files in its unit) from `start` to `last_version`."""
        version, index = int(start["version"]), int(start["index"])
        if start["snapshot"]:
            files = sorted(self.table().snapshot(version).files(), key=lambda f: f.path)
            for k in range(index, len(files)):
                yield version, k, True, files[k], len(files)
            version, index = version + 1, 0
        for commit in self.table().commit_files(version, last_version) if version <= last_version else []:
            if commit.removes_data and not self.options.skip_change_commits:
                raise InvalidArgumentError(
                    f"txnlog: version {commit.version} of the source table removes or changes rows; a "
                    "stream reads appends only. Help: .option('skipChangeCommits', 'true') skips such commits"
                )
            if commit.removes_data:
                continue
            if commit.metadata is not None and _schema_changed(
                commit.metadata.schema_string, self.schema_json
            ):
                raise InvalidArgumentError(
                    f"txnlog: the source table's schema changed at version {commit.version}; restart the "
                    "query to read the new schema"
                )
            first = index if commit.version == version else 0
            for k in range(first, len(commit.adds)):
                yield commit.version, k, False, commit.adds[k], len(commit.adds)

    @carrying
    def latestOffset(self, start: Offset, limit: ReadLimit) -> Offset:
        latest = self.table().latest_version()
        budget = limit.max_files if isinstance(limit, ReadMaxFiles) else None
        for taken, (version, index, snapshot, _, count) in enumerate(self._walk(start, latest), start=1):
            if budget is not None and taken >= budget:
                return _next(version, index, snapshot, count)
        end = {"version": latest + 1, "index": 0, "snapshot": False}
        return end if _key(end) > _key(start) else start

    @carrying
    def partitions(self, start: Offset, end: Offset) -> Sequence[InputPartition]:
        last = int(end["version"]) - (0 if int(end["index"]) > 0 else 1)
        files = [
            f
            for v, k, s, f, _ in self._walk(start, last)
            if _key({"version": v, "index": k, "snapshot": s}) < _key(end)
        ]
        snap = self.table().snapshot(max(int(start["version"]), min(last, self.table().latest_version())))
        scan = FileScan(
            self.options.path, self.options.storage_options or None, snap.schema,
            tuple(snap.partition_columns), snap.column_names,
        )  # fmt: skip
        return [FilesPartition(run, scan) for run in pack(files, self.options.partition_bytes)]

    @carrying_iterator
    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        assert isinstance(partition, FilesPartition)
        for table in partition.scan.read(partition.files):
            yield from table.to_batches()

    @carrying
    def commit(self, end: Offset) -> None:
        return None


def _schema_changed(schema_string: str, spark_schema_json: str) -> bool:
    return to_spark_schema(without_mapping(schema_from_json(schema_string))).json() != spark_schema_json


def stream_app_id(options: Mapping[str, str]) -> str:
    """The txn app id of a streaming write (see the module docstring)."""
    lowered = {str(k).lower(): str(v) for k, v in options.items()}
    if lowered.get("txnappid"):
        return lowered["txnappid"]
    checkpoint = lowered.get("checkpointlocation")
    if not checkpoint:
        raise InvalidArgumentError(
            "txnlog: a streaming write needs .option('checkpointLocation', ...) (or 'txnAppId') to commit "
            "each micro-batch exactly once across restarts"
        )
    return "txnlog-stream-" + hashlib.sha256(checkpoint.encode()).hexdigest()[:32]


class TxnlogStreamWriter(DataSourceStreamArrowWriter):
    """Each micro-batch: a batch write (TxnlogWriter) committed with txn (app id, batch id)."""

    def __init__(self, options: Mapping[str, str], schema: StructType) -> None:
        self.app_id = stream_app_id(options)
        rest = {
            k: v
            for k, v in options.items()
            if str(k).lower() not in ("checkpointlocation", "txnappid", "txnversion")
        }
        self.batch = TxnlogWriter(WriteOptions.parse(rest), schema, overwrite=False)

    @carrying
    def write(self, iterator: Iterator[pa.RecordBatch]) -> WriterCommitMessage:
        return self.batch.write(iterator)

    @carrying
    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        adds = [a for m in messages if isinstance(m, Written) for a in m.adds]
        txn = (self.app_id, int(batchId))
        seen = txn_version(self.batch.plan, self.app_id)
        if seen is not None and seen > txn[1]:
            # Spark replays only its last batch (seen == batchId): a higher one means the checkpoint
            # was reset under the same location, and committing nothing would drop this data
            delete_files(self.batch.plan, adds)
            raise InvalidArgumentError(
                f"txnlog: the table already holds batch {seen} of streaming app {self.app_id!r}, and Spark "
                f"now writes batch {batchId}: the query's checkpoint was reset. Nothing was written. Help: "
                "give the restarted query a new .option('txnAppId', ...)"
            )
        if seen is not None and seen == txn[1]:
            delete_files(self.batch.plan, adds)  # a replayed batch: its rows are already in the table
            return
        commit_write(self.batch, adds, txn)

    @carrying
    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        # (also after a commit whose outcome is unknown: files a landed version holds stay)
        abort_files(self.batch.plan, [a for m in messages if isinstance(m, Written) for a in m.adds])
