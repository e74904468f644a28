"""Schema and property commands: `set-properties`, `unset-properties`, `rename-column`, `drop-columns`,
`add-constraint`, `drop-constraint`, `drop-feature`.

`txnlog set-properties TABLE delta.columnMapping.mode=name` turns column mapping on (no file is
rewritten); then `rename-column TABLE old new` and `drop-columns TABLE a b` change only the schema.
`txnlog add-constraint TABLE positive "amount > 0"` checks every live row with the engine first
(a table too big for one machine: `SparkTable.add_constraint`). Each commits one version and prints
it (`--json`: {"version": N}; `drop-constraint --if-exists` of a missing one: {"version": null}).
"""

from __future__ import annotations

import dataclasses
from typing import Annotated

import typer

from airflow_txnlog.cli._output import (
    JsonOpt,
    UriArg,
    console,
    emit_json,
    engine_errors,
    key_values,
    open_table,
)
from airflow_txnlog.engine import ConstraintNotFoundError, PropertyNotSetError


def _done(what: str, version: int | None, as_json: bool) -> None:
    if as_json:
        emit_json({"version": version})
    elif version is None:
        console().print(f"{what}: nothing to do, no version committed")
    else:
        console().print(f"{what}: committed version {version}")


def set_properties(
    ctx: typer.Context,
    uri: UriArg,
    properties: Annotated[list[str], typer.Argument(help="KEY=VALUE pairs, e.g. delta.appendOnly=true.")],
    as_json: JsonOpt = False,
) -> None:
    """Set table properties; the protocol grows to the table features they turn on."""
    with engine_errors():
        version = open_table(ctx, uri).set_properties(key_values(properties, "property"))
    _done("set-properties", version, as_json)


def unset_properties(
    ctx: typer.Context,
    uri: UriArg,
    keys: Annotated[list[str], typer.Argument(help="Property keys to remove, e.g. delta.enableRowTrackng.")],
    if_exists: Annotated[bool, typer.Option("--if-exists", help="Skip keys that are not set.")] = False,
    as_json: JsonOpt = False,
) -> None:
    """Remove table properties (ALTER TABLE UNSET TBLPROPERTIES), e.g. a typo recorded earlier."""
    with engine_errors():
        try:
            version = open_table(ctx, uri).unset_properties(keys, if_exists=if_exists)
        except PropertyNotSetError as exc:  # its Help names the engine's if_exists=True
            raise exc.worded_for("--if-exists") from None
    _done("unset-properties", version, as_json)


def rename_column(
    ctx: typer.Context,
    uri: UriArg,
    old: Annotated[str, typer.Argument(help="The column (a dotted path for a nested field).")],
    new: Annotated[str, typer.Argument(help="Its new name.")],
    as_json: JsonOpt = False,
) -> None:
    """Rename a column of a column-mapped table (metadata only)."""
    with engine_errors():
        version = open_table(ctx, uri).rename_column(old, new)
    _done("rename-column", version, as_json)


def drop_columns(
    ctx: typer.Context,
    uri: UriArg,
    columns: Annotated[list[str], typer.Argument(help="Top-level columns to drop.")],
    as_json: JsonOpt = False,
) -> None:
    """Drop columns of a column-mapped table from its schema (metadata only)."""
    with engine_errors():
        version = open_table(ctx, uri).drop_columns(columns)
    _done("drop-columns", version, as_json)


def add_constraint(
    ctx: typer.Context,
    uri: UriArg,
    name: Annotated[str, typer.Argument(help="The constraint's name (letters, digits, underscores).")],
    expression: Annotated[str, typer.Argument(help='A Spark SQL boolean expression, e.g. "amount > 0".')],
    as_json: JsonOpt = False,
) -> None:
    """Add a CHECK constraint, after checking every live row (NULL breaks it, as in Delta)."""
    with engine_errors():
        version = open_table(ctx, uri).add_constraint(name, expression)
    _done("add-constraint", version, as_json)


def drop_constraint(
    ctx: typer.Context,
    uri: UriArg,
    name: Annotated[str, typer.Argument(help="The constraint's name.")],
    if_exists: Annotated[
        bool, typer.Option("--if-exists", help="A missing constraint is not an error.")
    ] = False,
    as_json: JsonOpt = False,
) -> None:
    """Drop a CHECK constraint."""
    with engine_errors():
        try:
            version = open_table(ctx, uri).drop_constraint(name, if_exists=if_exists)
        except ConstraintNotFoundError as exc:  # its Help names the engine's if_exists=True
            raise exc.worded_for("--if-exists") from None
    _done("drop-constraint", version, as_json)


def drop_feature(
    ctx: typer.Context,
    uri: UriArg,
    feature: Annotated[
        str, typer.Argument(help="The table feature, e.g. inCommitTimestamp or deletionVectors.")
    ],
    truncate_history: Annotated[
        bool,
        typer.Option(
            "--truncate-history", help="checkpointProtection only: clean up its protected history first."
        ),
    ] = False,
    as_json: JsonOpt = False,
) -> None:
    """Drop a table feature from the protocol, as Delta 4's DROP FEATURE (docs/maintenance.md)."""
    with engine_errors():
        res = open_table(ctx, uri).drop_feature(feature, truncate_history=truncate_history)
    if as_json:
        emit_json(dataclasses.asdict(res))
        return
    protected = "; history below it protected (checkpointProtection)" if res.protected_before else ""
    console().print(
        f"drop-feature {feature}: committed versions {res.commits}, the drop at {res.version}{protected}"
    )
