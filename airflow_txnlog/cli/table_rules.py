"""What `txnlog describe --json` says about a table's rules and layout features.

Per column, keys added to the column's entry of describe's `schema`, only when the column has them:

    generated   {"expression", "enforced"}: its `delta.generationExpression`; enforced only when the
                protocol supports `generatedColumns` (a Databricks 8.0 table's is a plain column)
    identity    {"start", "step", "highWaterMark" (None: nothing generated yet),
                 "generated": "ALWAYS" | "BY DEFAULT", "allowExplicitInsert"}
    invariants  [{"column": path, "expression"}]: `delta.invariants` of the column and its nested fields

Per table:

    constraints  [{"name", "expression"}]: the CHECK constraints (`delta.constraints.<name>`), by name
    clustering   {"columns": [...]} for a clustered table ([] after CLUSTER BY NONE), else None
    rowTracking  {"supported", "enabled", "suspended", "highWaterMark"} (None: no row id assigned)
    domains      {domain: configuration}: every live metadata domain, `delta.*` ones too
    warnings     what could not be read, each "<what>: <why>"; describe still shows the rest

Everything comes from the snapshot's metadata, protocol and domains through the engine's own readers
(engine.features.*), so describe shows what the writers enforce.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from airflow_txnlog.cli._output import one_line
from airflow_txnlog.engine import Snapshot, TxnLogError
from airflow_txnlog.engine.spi import clustering, constraints, generated, identity, row_tracking

T = TypeVar("T")


def _read(what: str, read: Callable[[], T], default: T, warnings: list[str]) -> T:
    """`read()`, or `default` with a warning when the table's metadata for `what` is unreadable."""
    try:
        return read()
    except TxnLogError as exc:
        warnings.append(f"{what}: {one_line(exc)}")
        return default


# ---------------------------------------------------------------------------------------------- columns
def column_rules(snap: Snapshot, warnings: list[str]) -> dict[str, dict[str, Any]]:
    """Top-level column name -> the keys describe adds to its schema entry (see the module docstring)."""
    none: dict[str, Any] = {}
    found: dict[str, dict[str, Any]] = {}
    for key, per_column in (
        ("generated", _generated(snap)),
        ("identity", _read("identity columns", lambda: _identities(snap), none, warnings)),
        ("invariants", _read("column invariants", lambda: _invariants(snap), none, warnings)),
    ):
        for column, value in per_column.items():
            found.setdefault(column, {})[key] = value
    return found


def _generated(snap: Snapshot) -> dict[str, dict[str, Any]]:
    stored = generated.of_schema_json(snap.metadata.schema_string)
    enforced = generated.enforced(snap.metadata, snap.protocol)
    return {
        column: {"expression": str(text), "enforced": column in enforced} for column, text in stored.items()
    }


def _identities(snap: Snapshot) -> dict[str, dict[str, Any]]:
    return {
        i.column: {
            "start": i.start,
            "step": i.step,
            "highWaterMark": i.high_water_mark,
            "generated": "BY DEFAULT" if i.allow_explicit_insert else "ALWAYS",
            "allowExplicitInsert": i.allow_explicit_insert,
        }
        for i in identity.of_metadata(snap.metadata)
    }


def _invariants(snap: Snapshot) -> dict[str, list[dict[str, str]]]:
    """Invariants by the top-level column they are in (a nested field's under its top column)."""
    names = sorted(snap.schema.names, key=len, reverse=True)  # ("a.b" before "a": names may hold dots)
    out: dict[str, list[dict[str, str]]] = {}
    for rule in constraints.rules(snap.metadata, snap.protocol):
        if rule.kind == constraints.INVARIANT:
            top = next((n for n in names if rule.name == n or rule.name.startswith(f"{n}.")), rule.name)
            out.setdefault(top, []).append({"column": rule.name, "expression": rule.expression})
    return out


# ---------------------------------------------------------------------------------------------- table
def table_rules(snap: Snapshot, warnings: list[str]) -> dict[str, Any]:
    """The table-level keys describe adds: constraints, clustering, rowTracking, domains."""
    domains = snap.domain_metadata()
    checks = constraints.constraints(snap.metadata)
    return {
        "constraints": [{"name": name, "expression": text} for name, text in checks.items()],
        "clustering": _clustering(snap, domains, warnings),
        "rowTracking": _row_tracking(snap, domains, warnings),
        "domains": domains,
    }


def _clustering(snap: Snapshot, domains: Mapping[str, str], warnings: list[str]) -> dict[str, Any] | None:
    if clustering.FEATURE not in (snap.protocol.writer_features or ()) and clustering.DOMAIN not in domains:
        return None
    columns: list[str] | None = _read("clustering keys", snap.clustering_columns, None, warnings)
    return {"columns": columns}


def _row_tracking(snap: Snapshot, domains: Mapping[str, str], warnings: list[str]) -> dict[str, Any]:
    conf = snap.metadata.configuration
    mark: int | None = None
    if row_tracking.DOMAIN in domains:
        mark = _read("row tracking", lambda: row_tracking.high_water_mark(domains), None, warnings)
    return {
        "supported": row_tracking.FEATURE in (snap.protocol.writer_features or ()),
        "enabled": row_tracking.enabled(conf),
        "suspended": str(conf.get(row_tracking.SUSPENDED, "false")).strip().lower() == "true",
        "highWaterMark": mark,
    }
