"""`txnlog`: inspect and maintain transaction-log (Delta) tables from the command line.

Commands (each takes `--json` for one machine-readable JSON document on stdout; the default is
human-readable rich tables):

    txnlog describe URI [--version N]           table metadata, protocol, schema, size, checkpoint
    txnlog history URI [--limit N]              commits, newest first
    txnlog files URI [--version N] [--filter SQL]   live data files (the filter prunes by partition/stats)
    txnlog checkpoint URI [--version N]         write a checkpoint

The global option `--storage-option KEY=VALUE` (repeatable, before the command) is passed to fsspec
as storage_options. Values are strings, except JSON objects/arrays and `true` / `false` / `null`,
which are decoded (e.g. `--storage-option anon=true`).

Any engine error (`TxnLogError`) prints one line `error: <message>` on stderr and exits with 1;
bad usage exits with 2.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import sys
from collections.abc import Iterator, Mapping, Sequence
from typing import Annotated, Any

import typer
from rich import box
from rich.console import Console
from rich.table import Table as RichTable

from airflow_txnlog.engine import AddFile, Snapshot, Table, TxnLogError

app = typer.Typer(
    name="txnlog",
    help="Inspect and maintain transaction-log (Delta) tables.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

UriArg = Annotated[str, typer.Argument(help="Table location: a path or an fsspec URI (s3://, ...).")]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print one JSON document instead of tables.")]
VersionOpt = Annotated[
    int | None, typer.Option("--version", "-v", min=0, help="Table version (default: the latest).")
]

_JSON_LITERALS = {"true": True, "false": False, "null": None}


# ---------------------------------------------------------------------------------------------- helpers
def parse_storage_options(items: Sequence[str]) -> dict[str, Any]:
    """`KEY=VALUE` strings to a storage_options dict (typer.BadParameter on a malformed item)."""
    out: dict[str, Any] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise typer.BadParameter(f"expected KEY=VALUE, got {item!r}", param_hint="--storage-option")
        out[key.strip()] = _option_value(value)
    return out


def _option_value(value: str) -> Any:
    if value.lower() in _JSON_LITERALS:
        return _JSON_LITERALS[value.lower()]
    if value.startswith(("{", "[")):
        try:
            return json.loads(value)
        except json.JSONDecodeError as exc:
            raise typer.BadParameter(f"invalid JSON value {value!r}: {exc}") from exc
    return value


def iso_ms(ms: int | None) -> str | None:
    """Milliseconds since the epoch as ISO-8601 UTC (`2024-01-02T03:04:05.678Z`)."""
    if ms is None:
        return None
    stamp = dt.datetime.fromtimestamp(ms / 1000, dt.UTC).isoformat(timespec="milliseconds")
    return stamp.replace("+00:00", "Z")


def delta_type(t: Any) -> str:
    """A Delta schema type (string or nested JSON object) as compact text, e.g. `array<long>`."""
    if isinstance(t, str):
        return t
    kind = t.get("type") if isinstance(t, dict) else None
    if kind == "array":
        return f"array<{delta_type(t['elementType'])}>"
    if kind == "map":
        return f"map<{delta_type(t['keyType'])},{delta_type(t['valueType'])}>"
    if kind == "struct":
        inner = ",".join(f"{f['name']}:{delta_type(f['type'])}" for f in t.get("fields", []))
        return f"struct<{inner}>"
    return json.dumps(t, sort_keys=True)


def _one_line(exc: BaseException) -> str:
    text = " ".join(line.strip() for line in str(exc).splitlines() if line.strip())
    return text or type(exc).__name__


@contextlib.contextmanager
def _engine_errors() -> Iterator[None]:
    """Turn any TxnLogError into `error: <message>` on stderr and exit code 1 (no traceback)."""
    try:
        yield
    except TxnLogError as exc:
        typer.echo(f"error: {_one_line(exc)}", err=True)
        raise typer.Exit(1) from None


def _open(ctx: typer.Context, uri: str) -> Table:
    options: dict[str, Any] = (ctx.obj or {}).get("storage_options") or {}
    return Table.open(uri, storage_options=options or None)


def _emit_json(doc: Any) -> None:
    sys.stdout.write(json.dumps(doc, indent=2, default=str) + "\n")
    sys.stdout.flush()


def _console() -> Console:
    """Plain-text console: table content is never read as rich markup or emoji codes."""
    return Console(highlight=False, markup=False, emoji=False)


def _compact(value: Any, sep: str = ", ") -> str:
    if value is None:
        return ""
    if isinstance(value, Mapping):
        return sep.join(f"{k}={v}" for k, v in value.items())
    return str(value)


# ---------------------------------------------------------------------------------------------- documents
def describe_doc(snap: Snapshot, uri: str) -> dict[str, Any]:
    """The `describe` JSON document of a snapshot."""
    meta, proto = snap.metadata, snap.protocol
    fields = json.loads(meta.schema_string).get("fields", [])
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
        "schema": [
            {"name": f["name"], "type": delta_type(f["type"]), "nullable": bool(f.get("nullable", True))}
            for f in fields
        ],
        "numFiles": snap.num_files,
        "sizeBytes": snap.size_bytes,
        "checkpointVersion": snap.checkpoint_version,
        "createdTime": iso_ms(meta.created_time),
        "timestamp": iso_ms(snap.timestamp),
    }


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
def _print_describe(doc: Mapping[str, Any]) -> None:
    console = _console()
    proto = doc["protocol"]
    overview = RichTable(title=f"Table {doc['location']}", show_header=False, title_justify="left")
    overview.add_column("field", style="bold")
    overview.add_column("value", overflow="fold")
    features = ", ".join([*proto["readerFeatures"], *proto["writerFeatures"]]) or "-"
    rows = [
        ("version", doc["version"]),
        ("id", doc["id"]),
        ("name", doc["name"] or "-"),
        ("description", doc["description"] or "-"),
        ("location", doc["location"]),
        ("protocol", f"reader {proto['minReaderVersion']}, writer {proto['minWriterVersion']}"),
        ("features", features),
        ("partition columns", ", ".join(doc["partitionColumns"]) or "-"),
        ("files", doc["numFiles"]),
        ("size (bytes)", doc["sizeBytes"]),
        ("checkpoint", "-" if doc["checkpointVersion"] is None else doc["checkpointVersion"]),
        ("created", doc["createdTime"] or "-"),
        ("committed", doc["timestamp"]),
    ]
    for key, value in rows:
        overview.add_row(key, str(value))
    console.print(overview)
    schema = RichTable(title="Schema", title_justify="left")
    for col in ("column", "type", "nullable"):
        schema.add_column(col, overflow="fold")
    for f in doc["schema"]:
        schema.add_row(f["name"], f["type"], "yes" if f["nullable"] else "no")
    console.print(schema)
    if doc["properties"]:
        table = RichTable(title="Properties", title_justify="left")
        table.add_column("key", overflow="fold")
        table.add_column("value", overflow="fold")
        for key, value in sorted(doc["properties"].items()):
            table.add_row(key, value)
        console.print(table)


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
    for e in doc:
        stamp = (e["timestamp"] or "").replace("T", " ")[:19]
        table.add_row(
            str(e["version"]),
            stamp,
            e["operation"] or "",
            _compact(e["operationParameters"], "\n"),
            "" if e["readVersion"] is None else str(e["readVersion"]),
            "" if e["isBlindAppend"] is None else str(e["isBlindAppend"]).lower(),
            _compact(e["operationMetrics"], "\n"),
        )
    _console().print(table)


def _print_files(doc: Mapping[str, Any]) -> None:
    title = f"{len(doc['files'])} live file(s) at version {doc['version']}"
    if doc["filter"]:
        title += f" matching {doc['filter']}"
    table = RichTable(title=title, title_justify="left")
    for col in ("path", "partition values", "size", "numRecords"):
        table.add_column(col, overflow="fold", justify="right" if col in ("size", "numRecords") else "left")
    for f in doc["files"]:
        records = "" if f["numRecords"] is None else str(f["numRecords"])
        table.add_row(f["path"], _compact(f["partitionValues"]), str(f["size"]), records)
    _console().print(table)


# ---------------------------------------------------------------------------------------------- commands
@app.callback()
def _global(
    ctx: typer.Context,
    storage_option: Annotated[
        list[str] | None,
        typer.Option(
            "--storage-option", "-o", metavar="KEY=VALUE", help="fsspec storage option (repeatable)."
        ),
    ] = None,
) -> None:
    """Inspect and maintain transaction-log (Delta) tables."""
    ctx.obj = {"storage_options": parse_storage_options(storage_option or [])}


@app.command()
def describe(ctx: typer.Context, uri: UriArg, version: VersionOpt = None, as_json: JsonOpt = False) -> None:
    """Show a table's metadata, protocol, schema, size and the checkpoint it loads from."""
    with _engine_errors():
        table = _open(ctx, uri)
        doc = describe_doc(table.snapshot(version), table.uri)
    if as_json:
        _emit_json(doc)
    else:
        _print_describe(doc)


@app.command()
def history(
    ctx: typer.Context,
    uri: UriArg,
    limit: Annotated[int | None, typer.Option("--limit", "-n", min=0, help="At most N commits.")] = None,
    as_json: JsonOpt = False,
) -> None:
    """List the commits still in the log, newest first."""
    with _engine_errors():
        doc = history_doc(_open(ctx, uri).history(limit))
    if as_json:
        _emit_json(doc)
    else:
        _print_history(doc)


@app.command()
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
    with _engine_errors():
        snap = _open(ctx, uri).snapshot(version)
        adds = sorted(snap.files(filter_), key=lambda a: a.path)
        doc = {"version": snap.version, "filter": filter_, "files": [file_doc(a) for a in adds]}
    if as_json:
        _emit_json(doc)
    else:
        _print_files(doc)


@app.command()
def checkpoint(ctx: typer.Context, uri: UriArg, version: VersionOpt = None, as_json: JsonOpt = False) -> None:
    """Write a checkpoint of a version (default: the latest) and update `_last_checkpoint`."""
    with _engine_errors():
        table = _open(ctx, uri)
        target = table.snapshot(version).version
        table.checkpoint(target)
    if as_json:
        _emit_json({"version": target, "location": table.uri})
    else:
        _console().print(f"checkpoint written at version {target}")


def main() -> None:
    """Console-script entry point (`txnlog`)."""
    app(prog_name="txnlog")


if __name__ == "__main__":
    main()
