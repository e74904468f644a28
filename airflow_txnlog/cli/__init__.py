"""`txnlog`: inspect and maintain transaction-log (Delta) tables from the command line.

Commands (each takes `--json` for one machine-readable JSON document on stdout; the default is
human-readable rich output):

    txnlog describe URI [--version N]           table metadata, protocol, schema, size, checkpoint;
                                                rules (generated and identity columns, invariants,
                                                CHECK constraints), clustering, row tracking, domains
    txnlog history URI [--limit N]              commits, newest first
    txnlog files URI [--version N] [--filter SQL]   live data files (the filter prunes by partition/stats)
    txnlog checkpoint URI [--version N]         write a checkpoint
    txnlog uniform-sync URI                     UniForm: the Iceberg metadata at the latest version
    txnlog savepoint create URI NAME [--version N] [--reason R] [--created-by U] [--expires-at ISO]
    txnlog savepoint list URI                   savepoints, oldest version first
    txnlog savepoint delete URI NAME
    txnlog restore URI (--version N | --timestamp TS | --savepoint NAME) [--dry-run] [--force] [--owner O]
    txnlog vacuum URI [--retain-hours H] [--execute] [--no-enforce-retention] [--lite]  (dry run)
    txnlog cleanup-log URI [--retain-hours H] [--execute]                         dry run unless --execute
    txnlog health URI [--small-file-bytes B]
    txnlog plan URI [--set NAME=VALUE]...        what the table needs now and why (runs nothing)
    txnlog optimize URI [--zorder-by a,b] [--where SQL] [--full] [--target-file-size B]
    txnlog cluster-by URI (a,b | --none)        a clustered table's keys (no file rewritten)
    txnlog publish URI [--version N] [--channel C]   mark an audited version (write-audit-publish)
    txnlog published URI [--channel C]          the version a channel publishes (exit 1: none)
    txnlog release publish LOG TABLE=VERSION... [--note T] [--publish-id ID] [--create]
                                                release several tables' versions as one cut
    txnlog release show LOG [--sequence N]      the current release (exit 1: none yet)
    txnlog release history LOG [--limit N]      the releases, newest first
    txnlog release rollback LOG --to N [--force] [--owner O] [--note T]
                                                restore every table to release N, as a new release

The global option `--storage-option KEY=VALUE` (repeatable, before the command) is passed to fsspec
as storage_options. Values are strings, except JSON objects/arrays and `true` / `false` / `null`,
which are decoded (e.g. `--storage-option anon=true`).

Any engine error (`TxnLogError`) prints one line `error: <message>` on stderr and exits with 1;
bad usage exits with 2.

Modules: `_output` (shared options, error handling, output helpers), `read` (describe, history,
files, checkpoint, uniform-sync), `table_rules` (describe's rules and features as JSON),
`describe_text` (describe as text, within 80 columns), `maintenance` (savepoints, restore, vacuum,
log cleanup, health), `publish` (publish, published), `release` (multi-table releases), `layout`
(optimize, cluster-by).
"""

from __future__ import annotations

from typing import Annotated

import typer

from airflow_txnlog.cli import layout, maintenance, plan, publish, read, release, schema
from airflow_txnlog.cli._output import iso_ms, parse_storage_options
from airflow_txnlog.cli.read import describe_doc, file_doc, history_doc
from airflow_txnlog.engine import Table
from airflow_txnlog.engine.spi import type_text as delta_type  # kept under the name the CLI exported

__all__ = [
    "Table",
    "app",
    "delta_type",
    "describe_doc",
    "file_doc",
    "history_doc",
    "iso_ms",
    "main",
    "parse_storage_options",
]

app = typer.Typer(
    name="txnlog",
    help="Inspect and maintain transaction-log (Delta) tables.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


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


app.command()(read.describe)
app.command()(read.history)
app.command()(read.files)
app.command()(read.checkpoint)
app.command("uniform-sync")(read.uniform_sync)
app.add_typer(maintenance.savepoint_app, name="savepoint")
app.command()(maintenance.restore)
app.command()(maintenance.vacuum)
app.command("cleanup-log")(maintenance.cleanup_log)
app.command()(maintenance.health)
app.command()(plan.plan)
app.command()(layout.optimize)
app.command("cluster-by")(layout.cluster_by)
app.command()(publish.publish)
app.command()(publish.published)
app.add_typer(release.release_app, name="release")
app.command("set-properties")(schema.set_properties)
app.command("unset-properties")(schema.unset_properties)
app.command("rename-column")(schema.rename_column)
app.command("drop-columns")(schema.drop_columns)
app.command("add-constraint")(schema.add_constraint)
app.command("drop-constraint")(schema.drop_constraint)
app.command("drop-feature")(schema.drop_feature)


def main() -> None:
    """Console-script entry point (`txnlog`)."""
    app(prog_name="txnlog")


if __name__ == "__main__":
    main()
