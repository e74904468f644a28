"""Layout commands: `optimize` (Z-order, liquid clustering or compaction, run by the engine in this
process) and `cluster-by` (a clustered table's keys).

    txnlog optimize URI --zorder-by a,b [--where "p = 'x'"] [--target-file-size BYTES]
    txnlog optimize URI [--full]          a clustered table: cluster by its keys (`--full`: its own
                                          clustered files too); any other table: compact small files
    txnlog cluster-by URI a,b | --none    set or remove the clustering keys (no file rewritten)

The rewrite holds one partition in memory (engine.maintenance.layout); a partition larger than this
machine's memory belongs to `SparkTable.optimize`, which takes the same arguments.
"""

from __future__ import annotations

from typing import Annotated

import typer

from airflow_txnlog.cli._output import JsonOpt, UriArg, console, emit_json, engine_errors, open_table


def _columns(text: str | None) -> list[str] | None:
    return None if text is None else [c.strip() for c in text.split(",") if c.strip()]


def optimize(
    ctx: typer.Context,
    uri: UriArg,
    *,
    zorder_by: Annotated[
        str | None, typer.Option("--zorder-by", help="Comma-separated columns to Z-order by.")
    ] = None,
    where: Annotated[str | None, typer.Option("--where", help="A predicate on partition columns.")] = None,
    full: Annotated[
        bool, typer.Option("--full", help="Clustered table: re-cluster the files clustered before too.")
    ] = False,
    target_file_size: Annotated[
        int | None, typer.Option("--target-file-size", help="Bytes per output file (default: the table's).")
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Rewrite files into a better layout (no data change): Z-order, clustering, or compaction."""
    with engine_errors():
        result = open_table(ctx, uri).optimize(
            zorder_by=_columns(zorder_by), where=where, full=full, target_file_size=target_file_size
        )
    doc = result.to_dict()
    if as_json:
        emit_json(doc)
        return
    how = f"{doc['mode']}" + (f" by {', '.join(doc['columns'])} ({doc['curve']})" if doc["columns"] else "")
    if doc["version"] is None:
        console().print(f"optimize ({how}): nothing to rewrite, no version committed")
        return
    console().print(
        f"optimize ({how}): committed version {doc['version']}: {doc['files_removed']} file(s) "
        f"({doc['bytes_removed']:,} bytes) rewritten as {doc['files_added']} ({doc['bytes_added']:,} bytes) "
        f"in {doc['partitions']} partition(s), {doc['seconds']} s"
    )


def cluster_by(
    ctx: typer.Context,
    uri: UriArg,
    columns: Annotated[str | None, typer.Argument(help="Comma-separated clustering columns.")] = None,
    *,
    none: Annotated[bool, typer.Option("--none", help="Remove the keys (CLUSTER BY NONE).")] = False,
    as_json: JsonOpt = False,
) -> None:
    """Set a table's clustering keys, or remove them with --none (no file is rewritten)."""
    if (columns is None) == (not none):
        raise typer.BadParameter("give the columns or --none, not both and not neither")
    if columns is not None and not _columns(columns):
        raise typer.BadParameter("no column named; use --none to remove the keys")
    with engine_errors():
        version = open_table(ctx, uri).cluster_by(None if none else _columns(columns))
    if as_json:
        emit_json({"version": version})
    else:
        console().print(f"cluster-by: committed version {version}")
