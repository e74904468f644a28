"""Read-only and inspection commands: `describe`, `history`, `files`, `checkpoint`."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping, Sequence
from typing import Annotated, Any

import typer
from rich import box
from rich.table import Table as RichTable

from airflow_txnlog.cli._output import (
    JsonOpt,
    UriArg,
    VersionOpt,
    compact,
    console,
    emit_json,
    engine_errors,
    iso_ms,
    open_table,
    print_rows,
)
from airflow_txnlog.cli.describe_text import print_describe
from airflow_txnlog.cli.table_rules import column_rules, table_rules
from airflow_txnlog.engine import AddFile, Snapshot
from airflow_txnlog.engine.spi import type_text


# ---------------------------------------------------------------------------------------------- documents
def describe_doc(snap: Snapshot, uri: str) -> dict[str, Any]:
    """The `describe` JSON document of a snapshot (the rule and feature keys: cli.table_rules)."""
    meta, proto = snap.metadata, snap.protocol
    warnings: list[str] = []
    return {
        "version": snap.version,
        "id": meta.id,
        "name": meta.name,
        "description": meta.description,
        "location": uri,
        "protocol": {
            "minReaderVersion": proto.min_reader_version,
            "minWriterVersion": proto.min_writer_version,
            "readerFeatures": list(proto.reader_features or []),
            "writerFeatures": list(proto.writer_features or []),
        },
        "partitionColumns": snap.partition_columns,
        "properties": snap.properties,
        "schema": _schema_doc(snap, column_rules(snap, warnings)),
        "numFiles": snap.num_files,
        "sizeBytes": snap.size_bytes,
        "checkpointVersion": snap.checkpoint_version,
        "createdTime": iso_ms(meta.created_time),
        "timestamp": iso_ms(snap.timestamp),
        **table_rules(snap, warnings),
        "warnings": warnings,
    }


def _schema_doc(snap: Snapshot, rules: Mapping[str, Mapping[str, Any]]) -> list[dict[str, Any]]:
    fields = json.loads(snap.metadata.schema_string).get("fields", [])
    return [
        {
            "name": f["name"],
            "type": type_text(f["type"]),
            "nullable": bool(f.get("nullable", True)),
            **rules.get(f["name"], {}),
        }
        for f in fields
    ]


def history_doc(entries: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The `history` JSON document: one object per commit, newest first."""
    return [
        {
            "version": e["version"],
            "timestamp": iso_ms(e.get("timestamp")),
            "operation": e.get("operation"),
            "operationParameters": e.get("operationParameters") or {},
            "readVersion": e.get("readVersion"),
            "isBlindAppend": e.get("isBlindAppend"),
            "operationMetrics": e.get("operationMetrics") or {},
        }
        for e in entries
    ]


def file_doc(add: AddFile) -> dict[str, Any]:
    """One live file of the `files` JSON document."""
    return {
        "path": add.path,
        "partitionValues": dict(add.partition_values),
        "size": add.size,
        "numRecords": add.num_records,
    }


# ---------------------------------------------------------------------------------------------- rendering
def _print_history(doc: Sequence[Mapping[str, Any]]) -> None:
    table = RichTable(
        title="History (newest first)", title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False
    )
    table.add_column("version", justify="right", no_wrap=True)
    table.add_column("timestamp (UTC)", no_wrap=True)
    table.add_column("operation", no_wrap=True)
    table.add_column("parameters", overflow="fold")
    table.add_column("read", justify="right", no_wrap=True)
    table.add_column("blind", no_wrap=True)
    table.add_column("metrics", overflow="fold")
    rows = [
        [
            str(e["version"]),
            (e["timestamp"] or "").replace("T", " ")[:19],
            e["operation"] or "",
            compact(e["operationParameters"], "\n"),
            "" if e["readVersion"] is None else str(e["readVersion"]),
            "" if e["isBlindAppend"] is None else str(e["isBlindAppend"]).lower(),
            compact(e["operationMetrics"], "\n"),
        ]
        for e in doc
    ]
    print_rows(table, rows, heading=3)


def _print_files(doc: Mapping[str, Any]) -> None:
    title = f"{len(doc['files'])} live file(s) at version {doc['version']}"
    if doc["filter"]:
        title += f" matching {doc['filter']}"
    table = RichTable(title=title, title_justify="left")
    for col in ("path", "partition values", "size", "numRecords"):
        table.add_column(col, overflow="fold", justify="right" if col in ("size", "numRecords") else "left")
    rows = [
        [
            f["path"],
            compact(f["partitionValues"]),
            str(f["size"]),
            "" if f["numRecords"] is None else str(f["numRecords"]),
        ]
        for f in doc["files"]
    ]
    print_rows(table, rows, heading=1)


# ---------------------------------------------------------------------------------------------- commands
def describe(ctx: typer.Context, uri: UriArg, version: VersionOpt = None, as_json: JsonOpt = False) -> None:
    """Show a table's metadata, protocol, schema, rules, clustering, row tracking, domains and size.

    Rules: generated and identity columns, column invariants, CHECK constraints."""
    with engine_errors():
        table = open_table(ctx, uri)
        doc = describe_doc(table.snapshot(version), table.uri)
    if as_json:
        emit_json(doc)
    else:
        print_describe(doc)


def history(
    ctx: typer.Context,
    uri: UriArg,
    limit: Annotated[int | None, typer.Option("--limit", "-n", min=0, help="At most N commits.")] = None,
    as_json: JsonOpt = False,
) -> None:
    """List the commits still in the log, newest first."""
    with engine_errors():
        doc = history_doc(open_table(ctx, uri).history(limit))
    if as_json:
        emit_json(doc)
    else:
        _print_history(doc)


def files(
    ctx: typer.Context,
    uri: UriArg,
    version: VersionOpt = None,
    filter_: Annotated[
        str | None,
        typer.Option("--filter", "-f", help="SQL predicate pruning files, e.g. \"day = '2024-01-01'\"."),
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """List the live data files (path, partition values, size, number of records)."""
    with engine_errors():
        snap = open_table(ctx, uri).snapshot(version)
        adds = sorted(snap.files(filter_), key=lambda a: a.path)
        doc = {"version": snap.version, "filter": filter_, "files": [file_doc(a) for a in adds]}
    if as_json:
        emit_json(doc)
    else:
        _print_files(doc)


def checkpoint(ctx: typer.Context, uri: UriArg, version: VersionOpt = None, as_json: JsonOpt = False) -> None:
    """Write a checkpoint of a version (default: the latest) and update `_last_checkpoint`."""
    with engine_errors():
        table = open_table(ctx, uri)
        target = table.snapshot(version).version
        table.checkpoint(target)
    if as_json:
        emit_json({"version": target, "location": table.uri})
    else:
        console().print(f"checkpoint written at version {target}")


def uniform_sync(ctx: typer.Context, uri: UriArg, as_json: JsonOpt = False) -> None:
    """UniForm: bring the Iceberg metadata to the latest version (a commit does it on its own; this
    catches up after a failed sync). A table without UniForm is an error."""
    with engine_errors():
        res = open_table(ctx, uri).uniform_sync()
    if as_json:
        emit_json(dataclasses.asdict(res))
        return
    if res.mode == "none":
        console().print(f"uniform-sync: the Iceberg metadata already reflects version {res.delta_version}")
        return
    console().print(
        f"uniform-sync: {res.metadata_location} reflects version {res.delta_version} ({res.mode}: "
        f"{res.files_added} files added, {res.files_removed} removed, {res.bytes_written:,} bytes written)"
    )
