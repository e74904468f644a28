"""Expectations on the Spark write and merge operators (`airflow_txnlog.spark.features.expectations`).

    expectations={"positive_amount": ("amount > 0", "drop"),
                  "known_country": ("country IN ('DE', 'FR')", "quarantine"),
                  "has_id": "id IS NOT NULL"}                  # action "fail" (the default)
    quarantine_table_uri="lake/orders_quarantine"              # needed by a quarantine rule

Checked when the DAG is parsed (light: no pyspark, no engine): unique, non-empty names (any text:
they are reported, never parsed as SQL), a non-empty expression, an action among fail / drop /
quarantine, a quarantine table when a rule needs one, and never the table written itself. At run
time, before anything is read or written, the quarantine table is checked again against the target
as the connection resolves both (`same_table`): the same location, or, when both exist, the same
table id (two spellings of one store). Then the source is split (`spark.features.expectations.check`);
quarantined rows are committed to the quarantine table FIRST, with the task's idempotency id scoped
to the quarantine (`quarantine_txn`: the app id + QUARANTINE_SCOPE, never the table write's own id,
so one commit can never pass for the other), created on first use with the source's schema plus
`_broken_rules`; then the table's own commit carries the counts in its operationMetrics
(`expectations.<rule>.dropped` / `.quarantined`). A retry after the quarantine commit finds its id
there and skips it, so quarantined rows are neither lost nor duplicated. The XCom and the asset
event report {rule: {"action", "rows"}}.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from airflow_txnlog.arguments import invalid, renders_later
from airflow_txnlog.assets import table_location

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from airflow_txnlog.hooks.txnlog import TxnLogHook

ACTIONS = ("fail", "drop", "quarantine")
QUARANTINE_SCOPE = "/quarantine"  # (appended to the task's app id for the quarantine commit)
Specs = dict[str, tuple[str, str]]


def quarantine_txn(txn: tuple[str, int]) -> tuple[str, int]:
    """The quarantine commit's idempotency id: the task's, scoped, so that it can never be taken for
    the table write's (or the reverse) whatever table each lands in."""
    return f"{txn[0]}{QUARANTINE_SCOPE}", txn[1]


def specs(value: object, quarantine_table_uri: object) -> Specs:
    """{name: (expression, action)} from the operator argument (InvalidArgumentError naming a bad one)."""
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise invalid(
            f"expectations must be a mapping {{name: expression or (expression, action)}}; got {value!r}"
        )
    out: Specs = {}
    for name, item in value.items():
        expression, action = (item, "fail") if isinstance(item, str) else _pair(name, item)
        if not isinstance(name, str) or not name.strip():
            raise invalid(f"expectation names must be non-empty strings; got {name!r}")
        if name.strip().lower() in {n.lower() for n in out}:
            raise invalid(f"expectation name {name!r} is given twice (names are compared ignoring case)")
        if not isinstance(expression, str) or not expression.strip():
            raise invalid(f"expectation {name}: the expression must be a non-empty SQL string")
        if action not in ACTIONS:
            raise invalid(f"expectation {name}: action {action!r} is not one of {ACTIONS}")
        out[name.strip()] = (expression, action)
    if any(a == "quarantine" for _, a in out.values()) and not isinstance(quarantine_table_uri, str):
        raise invalid("a quarantine expectation needs quarantine_table_uri (the table its rows go to)")
    return out


def refuse_quarantine_is_target(table_uri: object, quarantine_table_uri: object) -> None:
    """At parse time: the quarantine table named as the table written (same location once trailing
    slashes, `file://` and `.` / `..` are resolved) is refused. Templated URIs, and a relative URI
    against an absolute one (a connection's base location decides), wait for `same_table`."""
    if not isinstance(table_uri, str) or not isinstance(quarantine_table_uri, str):
        return
    if renders_later(table_uri) or renders_later(quarantine_table_uri):
        return
    if _relative(table_uri) != _relative(quarantine_table_uri):
        return
    if table_location(table_uri) == table_location(quarantine_table_uri):
        raise invalid(_SAME_TABLE.format(table_uri, quarantine_table_uri))


_SAME_TABLE = (
    "quarantine_table_uri {1!r} is the table this task writes ({0!r}): quarantined rows would land in "
    "it. Help: give a table of their own, e.g. {0!r} + '_quarantine'"
)


def _relative(uri: str) -> bool:
    head, sep, _ = uri.partition("://")
    return not (sep and head.isalnum()) and not uri.startswith("/")


def same_table(hook: TxnLogHook, table_uri: str, quarantine_table_uri: str) -> None:
    """At run time, before anything is written: InvalidArgumentError when the quarantine table is the
    target as the connection resolves them (same location, or both exist with the same table id)."""
    from airflow_txnlog.engine import TableNotFoundError  # noqa: PLC0415 - no engine at parse time

    target, quarantine = hook.resolve_uri(table_uri), hook.resolve_uri(quarantine_table_uri)
    if table_location(target) == table_location(quarantine):
        raise invalid(_SAME_TABLE.format(table_uri, quarantine_table_uri))
    try:
        # (the table ids from the latest version checksums, without loading either table's files)
        ids = {
            hook.get_table(uri, lazy=True).summary().metadata.id for uri in (table_uri, quarantine_table_uri)
        }
    except TableNotFoundError:
        return  # (one of them is created by this task: the locations differ, so the tables do)
    if len(ids) == 1:
        raise invalid(_SAME_TABLE.format(table_uri, quarantine_table_uri) + " (the same table id)")


def _pair(name: object, item: object) -> tuple[object, object]:
    if isinstance(item, (tuple, list)) and len(item) == 2:
        return item[0], item[1]
    raise invalid(f"expectation {name!r}: give an expression or (expression, action); got {item!r}")


def apply(
    spark: SparkSession,
    df: DataFrame,
    rules: Specs,
    *,
    hook: TxnLogHook,
    quarantine_table_uri: str | None,
    txn: tuple[str, int],
    tags: Mapping[str, str],
) -> tuple[DataFrame, dict[str, int], dict[str, Any]]:
    """(the rows to write, operationMetrics entries, the report for XCom / asset event)."""
    from airflow_txnlog.spark.features.expectations import Expectation, check  # noqa: PLC0415 - pyspark at run time

    checked = check(df, [Expectation(n, e, a) for n, (e, a) in rules.items()])
    if checked.quarantined is not None and checked.quarantined_rows and quarantine_table_uri is not None:
        _quarantine(
            spark,
            checked.quarantined,
            hook=hook,
            uri=quarantine_table_uri,
            txn=quarantine_txn(txn),
            tags=tags,
        )
    report = {"rules": checked.report(), "quarantined_rows": checked.quarantined_rows}
    return checked.rows, checked.metrics(), report


def _quarantine(
    spark: SparkSession,
    rows: DataFrame,
    *,
    hook: TxnLogHook,
    uri: str,
    txn: tuple[str, int],
    tags: Mapping[str, str],
) -> None:
    """Commit `rows` to the quarantine table (created on first use) with the task's idempotency id.
    Two tasks that both create it (say a dated and a manual run at once) both land: the one that
    loses the race for version 0 appends to the winner's table."""
    from airflow_txnlog.engine import (  # noqa: PLC0415
        TableCreatedConcurrentlyError,
        TableExistsError,
        TableNotFoundError,
    )
    from airflow_txnlog.spark import SparkTable  # noqa: PLC0415
    from airflow_txnlog.spark.schemas import to_arrow_schema  # noqa: PLC0415

    def write(table: Any) -> None:
        table.default_tags = dict(tags)
        options = hook.storage_options_for(table.uri) or None
        SparkTable(spark, table.uri, storage_options=options, table=table).write(
            rows, merge_schema=True, txn=txn
        )

    try:
        write(hook.get_table(uri))
        return
    except TableNotFoundError:
        pass
    try:
        write(hook.create_table(uri, schema=to_arrow_schema(rows.schema), defer=True))
    except (TableExistsError, TableCreatedConcurrentlyError):
        write(hook.get_table(uri))
