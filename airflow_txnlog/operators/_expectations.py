"""Expectations on the Spark write and merge operators (`airflow_txnlog.spark.expectations`).

    expectations={"positive_amount": ("amount > 0", "drop"),
                  "known_country": ("country IN ('DE', 'FR')", "quarantine"),
                  "has_id": "id IS NOT NULL"}                  # action "fail" (the default)
    quarantine_table_uri="lake/orders_quarantine"              # needed by a quarantine rule

Checked when the DAG is parsed (light: no pyspark, no engine): unique identifier names, a non-empty
expression, an action among fail / drop / quarantine, a quarantine table when a rule needs one. At
run time the source is split (`spark.expectations.check`); quarantined rows are committed to the
quarantine table FIRST, with the task's idempotency id (created on first use, its schema the
source's plus `_broken_rules`), then the table's own commit carries the counts in its
operationMetrics (`expectations.<rule>.dropped` / `.quarantined`). A retry after the quarantine
commit finds the id there and skips it, so quarantined rows are neither lost nor duplicated. The
XCom and the asset event report {rule: {"action", "rows"}}.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from airflow_txnlog.arguments import invalid

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from airflow_txnlog.hooks.txnlog import TxnLogHook

ACTIONS = ("fail", "drop", "quarantine")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
Specs = dict[str, tuple[str, str]]


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
        if not isinstance(name, str) or not _NAME.fullmatch(name) or name.lower() in {n.lower() for n in out}:
            raise invalid(f"expectation name {name!r} must be a unique identifier")
        if not isinstance(expression, str) or not expression.strip():
            raise invalid(f"expectation {name}: the expression must be a non-empty SQL string")
        if action not in ACTIONS:
            raise invalid(f"expectation {name}: action {action!r} is not one of {ACTIONS}")
        out[name] = (expression, action)
    if any(a == "quarantine" for _, a in out.values()) and not isinstance(quarantine_table_uri, str):
        raise invalid("a quarantine expectation needs quarantine_table_uri (the table its rows go to)")
    return out


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
    from airflow_txnlog.spark.expectations import Expectation, check  # noqa: PLC0415 - pyspark at run time

    checked = check(df, [Expectation(n, e, a) for n, (e, a) in rules.items()])
    if checked.quarantined is not None and checked.quarantined_rows and quarantine_table_uri is not None:
        _quarantine(spark, checked.quarantined, hook=hook, uri=quarantine_table_uri, txn=txn, tags=tags)
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
