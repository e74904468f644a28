"""Planned maintenance: plan every table, run what each needs (per table, under a pool, highest benefit
first, within a byte budget), record every decision and its measured result.

    plan (TxnLogMaintenancePlanOperator)          one plan per table -> work items (XCom)
      -> maintain[i] (a mapped task group, one map index per table with actions, best first):
           checkpoint -> optimize -> vacuum -> cleanup_log   (TxnLogPlannedActionsOperator each:
           operators.planned_actions)
      -> history (TxnLogMaintenanceHistoryOperator, runs whatever happened upstream)
           appends one row per decision to the maintenance-history Delta table, logs a short report,
           and fails the run when an action failed or a table could not be planned

`planned_maintenance(...)` builds the three inside a DAG. Everything is a dry run unless
`dry_run=False`: the plan is made, the actions report what they would do, the history records it.
A stage task records an action that failed or lost a race (`conflict`: a concurrent commit took its
files; planning again next run sees the new state) and goes on with the table's next action, so one
table's failure neither hides the others' results nor stops the history.

These operators emit no asset events: they change no data (OPTIMIZE commits dataChange=false).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from airflow.sdk import BaseOperator, Context, task_group
from airflow.sdk.definitions._internal.node import DAGNode

from airflow_txnlog.arguments import flag, invalid, renders_later
from airflow_txnlog.assets import table_asset_uri
from airflow_txnlog.hooks.txnlog import TxnLogHook
from airflow_txnlog.operators.planned_actions import TxnLogPlannedActionsOperator

DEFAULT_HISTORY_CONN = TxnLogHook.default_conn_name
ITEMS_KEY = "items"
FAILING = ("failed", "error", "no_result")  # statuses that fail the history task


def _table_list(value: object) -> list[str] | None:
    if value is None:
        return None
    if isinstance(value, str) and not renders_later(value):  # (a rendered template: comma-separated)
        value = [t.strip() for t in value.split(",") if t.strip()]
    if (
        isinstance(value, str)
        or not isinstance(value, Sequence)
        or not all(isinstance(v, str) for v in value)
    ):
        raise invalid(f"tables must be a list of table URIs or None (the catalog), got {value!r}")
    if not value:
        raise invalid("tables is empty: give table URIs, or None for every table Airflow knows")
    return list(value)


def _budget(value: object) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise invalid(f"byte_budget must be an int >= 0 or None (no budget), got {value!r}")
    return value


class TxnLogMaintenancePlanOperator(BaseOperator):
    """Plan maintenance for `tables` (None: every table Airflow knows, read through the api-server).

    Returns the work items with actions (what the per-table group is mapped over: Airflow maps over
    return values only); pushes every item (each table, its actions, over-budget actions, skips, a
    planning error) under the XCom key `items`, which the history task records.

    :param tables: table URIs (templated: a template may render a comma-separated string); None
        reads the catalog (`TxnLogCatalogHook`), where a location without a Delta log (an asset of
        other files) is skipped, not an error.
    :param txnlog_conn_id: the connection of the listed tables (catalog tables bring their own).
    :param settings: planner settings for every table (`Table.plan_maintenance(**settings)`).
    :param byte_budget: bytes compaction may read + write in this run (None: no budget).
    :param catalog_conn_id: the api-server connection for `tables=None`.
    :param history_uri: the maintenance-history table (`planned_maintenance` passes its own): the
        rewrites' paths go to plan files under it (`_plans/<run>/`: operators._plan_files), so XCom
        carries ids and counts only, and the byte budget's fair shares read from it which tables
        waited in the DAG's previous runs (operators._maintenance_work). None: paths stay in XCom
        (fine for small tables) and no table counts as having waited.
    :param history_conn_id: the connection of `history_uri`.
    :param planning_workers: processes that plan the tables (engine `plan_tables`): None, one per
        core for eight tables or more; 1 plans them all in the task's own process.
    """

    template_fields: Sequence[str] = ("tables", "txnlog_conn_id", "history_uri")

    def __init__(
        self,
        *,
        tables: Sequence[str] | None = None,
        txnlog_conn_id: str = TxnLogHook.default_conn_name,
        settings: Mapping[str, Any] | None = None,
        byte_budget: int | None = None,
        catalog_conn_id: str = "txnlog_airflow_api",
        history_uri: str | None = None,
        history_conn_id: str = DEFAULT_HISTORY_CONN,
        planning_workers: int | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        if planning_workers is not None and (
            isinstance(planning_workers, bool)
            or not isinstance(planning_workers, int)
            or planning_workers < 1
        ):
            raise invalid(f"planning_workers must be a positive integer or None, got {planning_workers!r}")
        self.planning_workers = planning_workers
        self.tables = tables if renders_later(tables) else _table_list(tables)
        self.history_uri = history_uri
        self.history_conn_id = history_conn_id
        self.txnlog_conn_id = txnlog_conn_id
        if settings is not None and not isinstance(settings, Mapping):
            raise invalid(f"settings must be a mapping of planner settings, got {settings!r}")
        self.settings = dict(settings or {})
        self.byte_budget = _budget(byte_budget)
        self.catalog_conn_id = catalog_conn_id

    def _targets(self) -> list[tuple[str, str]]:
        tables = _table_list(self.tables)
        if tables is not None:
            return [(t, self.txnlog_conn_id) for t in tables]
        from airflow_txnlog.hooks.catalog import TxnLogCatalogHook  # noqa: PLC0415 - httpx at run time

        return [(t["uri"], t["conn_id"]) for t in TxnLogCatalogHook(self.catalog_conn_id).tables()]

    def execute(self, context: Context) -> list[dict[str, Any]]:
        from airflow_txnlog.operators._maintenance_work import runnable, work_items  # noqa: PLC0415

        plans = self._plans()
        waited = self._waited(context) if self.byte_budget is not None else {}
        items = work_items(plans, byte_budget=self.byte_budget, waited=waited)
        for item in items:
            self.log.info(
                "%s: %d action(s), %d over budget, %d skip(s)%s",
                item["table"], len(item["actions"]), len(item["over_budget"]), len(item["skipped"]),
                f"; error: {item['error']}" if item["error"] else "",
            )  # fmt: skip
        if self.history_uri is not None:
            run = (context["dag"].dag_id, str(context["run_id"]), self.task_id)
            items = self._paths_to_files(items, run)
        context["ti"].xcom_push(key=ITEMS_KEY, value=items)
        return runnable(items)

    def _plans(self) -> list[dict[str, Any]]:
        """Each table's plan dict with its table, connection and asset URI, or its error; planned by
        `planning_workers` processes (engine.plan_tables), the connections resolved here first."""
        from airflow_txnlog.engine import PlanTarget, plan_tables  # noqa: PLC0415 - no pyarrow at parse time

        named: list[dict[str, Any]] = []
        targets: list[PlanTarget] = []
        hooks: dict[str, TxnLogHook] = {}
        for uri, conn_id in self._targets():
            item: dict[str, Any] = {"table": uri, "conn_id": conn_id, "asset_uri": None}
            try:  # one table whose connection cannot be read must not stop the others
                hook = hooks.setdefault(conn_id, TxnLogHook(txnlog_conn_id=conn_id))
                full = hook.resolve_uri(uri)
                item["asset_uri"] = table_asset_uri(full)
                options = hook.storage_options_for(uri) or None
                targets.append(PlanTarget(full, storage_options=options, single_writer=hook.single_writer))
            except Exception as exc:
                self.log.warning("cannot plan %s: %s: %s", uri, type(exc).__name__, exc)
                item["error"] = f"{type(exc).__name__}: {exc}"
            named.append(item)
        outcomes = iter(plan_tables(targets, settings=self.settings, workers=self.planning_workers))
        return [item if "error" in item else self._with(item, next(outcomes)) for item in named]

    def _with(self, item: dict[str, Any], outcome: Any) -> dict[str, Any]:
        """`item` with its table's plan, or with the reason it has none."""
        if outcome.plan is not None:
            return {**outcome.plan, **item}
        if outcome.not_found and _table_list(self.tables) is None:
            # (the catalog names every asset at a table-like location: a plain folder is not one)
            self.log.info("%s has no Delta log: not a table, skipped", item["table"])
            return {**item, "not_a_table": f"no Delta log at {item['table']}: not a table"}
        if not outcome.not_found:  # (a table the DAG lists: its absence is an error, said as one)
            self.log.warning("cannot plan %s: %s", item["table"], outcome.error)
        return {**item, "error": outcome.error}

    def _waited(self, context: Context) -> dict[str, int]:
        """{table: runs in a row it waited for the byte budget} from the history (none without one)."""
        import datetime as dt  # noqa: PLC0415

        from airflow_txnlog.operators._maintenance_history import waited_runs  # noqa: PLC0415

        if self.history_uri is None:
            return {}
        hook = TxnLogHook(txnlog_conn_id=self.history_conn_id)
        uri = hook.resolve_uri(str(self.history_uri))
        dag_id = context["dag"].dag_id
        now = dt.datetime.now(dt.UTC)
        waited = waited_runs(
            uri, dag_id=dag_id, now=now, storage_options=hook.storage_options_for(uri) or None
        )
        if waited:
            self.log.info("tables that waited for the byte budget (runs in a row): %s", waited)
        return waited

    def _paths_to_files(self, items: list[dict[str, Any]], run: tuple[str, str, str]) -> list[dict[str, Any]]:
        """The items without their rewrites' paths, which go to plan files (operators._plan_files)."""
        from airflow_txnlog.operators._maintenance_work import without_paths  # noqa: PLC0415
        from airflow_txnlog.operators._plan_files import plan_storage, write_plan_file  # noqa: PLC0415

        hook = TxnLogHook(txnlog_conn_id=self.history_conn_id)
        uri = hook.resolve_uri(str(self.history_uri))
        storage = plan_storage(hook, uri)
        out = []
        for index, item in enumerate(items):
            slim, paths = without_paths(item)
            if paths:
                key = write_plan_file(storage, run, index, item["table"], paths)
                slim["plan_file"] = {"uri": uri, "key": key, "conn_id": self.history_conn_id}
            out.append(slim)
        return out


class TxnLogMaintenanceHistoryOperator(BaseOperator):
    """Append every decision of the run and its measured result to the history table; a report.

    :param history_uri: the maintenance-history Delta table (created on first use). Templated; None:
        the `[txnlog] maintenance_history_uri` option, which the Tables view reads too.
    :param plan_task_id: the plan task; `result_task_ids`: the stage tasks (all map indexes read).
    :param fail_on_error: fail this task (so the run) when an action failed or did not report, or a
        table could not be planned — after the history is written. A lost race (`conflict`: a
        concurrent commit took the files) is recorded, not failed: the next plan sees the new state.
    """

    template_fields: Sequence[str] = ("history_uri", "txnlog_conn_id")

    def __init__(
        self,
        *,
        history_uri: str | None = None,
        plan_task_id: str,
        result_task_ids: Sequence[str],
        dry_run: bool = True,
        txnlog_conn_id: str = DEFAULT_HISTORY_CONN,
        fail_on_error: bool = True,
        **kwargs: Any,
    ) -> None:
        kwargs.setdefault("trigger_rule", "all_done")
        super().__init__(**kwargs)
        self.history_uri = configured_history_uri() if history_uri is None else history_uri
        self.plan_task_id = plan_task_id
        self.result_task_ids = list(result_task_ids)
        self.is_dry_run = flag("dry_run", dry_run)
        self.txnlog_conn_id = txnlog_conn_id
        self.fail_on_error = flag("fail_on_error", fail_on_error)

    def execute(self, context: Context) -> dict[str, Any]:
        import datetime as dt  # noqa: PLC0415

        from airflow_txnlog.operators import _maintenance_history as history  # noqa: PLC0415 - pyarrow

        ti = context["ti"]
        items = ti.xcom_pull(task_ids=self.plan_task_id, key=ITEMS_KEY)
        if items is None:
            raise RuntimeError(f"the plan task {self.plan_task_id!r} left no plan: nothing to record")
        pulled = ti.xcom_pull(task_ids=self.result_task_ids) or []
        results = [r for batch in pulled if isinstance(batch, list) for r in batch]
        rows = history.history_rows(
            items, results, dag_id=context["dag"].dag_id, run_id=context["run_id"],
            dry_run=self.is_dry_run, now=dt.datetime.now(dt.UTC),
        )  # fmt: skip
        hook = TxnLogHook(txnlog_conn_id=self.txnlog_conn_id)
        uri = hook.resolve_uri(self.history_uri)
        version = history.append_history(uri, rows, storage_options=hook.storage_options_for(uri))
        self._forget_plan_files(items, (context["dag"].dag_id, str(context["run_id"]), self.plan_task_id))
        summary = history.report(rows)
        self.log.info("maintenance history %s version %s:\n%s", uri, version, summary["text"])
        bad = {k: v for k, v in summary["by_status"].items() if k in FAILING}
        if bad and self.fail_on_error:
            raise RuntimeError(f"planned maintenance did not all succeed: {bad} (see the history table)")
        return {**summary, "history_version": version, "rows": len(rows)}

    def _forget_plan_files(self, items: Sequence[Mapping[str, Any]], run: tuple[str, str, str]) -> None:
        """Delete the run's plan files (its stage tasks are done: this task runs last); best effort,
        a file left behind is only bytes (`_plans/` is hidden from vacuum)."""
        from airflow_txnlog.operators._plan_files import delete_run, plan_storage  # noqa: PLC0415

        places = {(r["uri"], r.get("conn_id")) for i in items if isinstance(r := i.get("plan_file"), Mapping)}
        for uri, conn_id in sorted(places, key=str):
            try:
                hook = TxnLogHook(txnlog_conn_id=conn_id or DEFAULT_HISTORY_CONN)
                self.log.info(
                    "deleted %d plan file(s) under %s", delete_run(plan_storage(hook, uri), run), uri
                )
            except Exception as exc:  # (any store error: the history is written, which is what counts)
                self.log.warning("could not delete the plan files under %s: %s", uri, exc)


def configured_history_uri() -> str:
    """The `[txnlog] maintenance_history_uri` option (env AIRFLOW__TXNLOG__MAINTENANCE_HISTORY_URI)."""
    from airflow.sdk import conf  # noqa: PLC0415

    uri = str(conf.get("txnlog", "maintenance_history_uri", fallback="") or "").strip()
    if not uri:
        raise invalid(
            "no maintenance-history table: pass history_uri=, or set [txnlog] maintenance_history_uri"
            " (AIRFLOW__TXNLOG__MAINTENANCE_HISTORY_URI)"
        )
    return uri


def planned_maintenance(
    *,
    history_uri: str | None = None,
    tables: Sequence[str] | None = None,
    txnlog_conn_id: str = TxnLogHook.default_conn_name,
    settings: Mapping[str, Any] | None = None,
    byte_budget: int | None = None,
    dry_run: bool = True,
    pool: str | None = None,
    catalog_conn_id: str = "txnlog_airflow_api",
    group_id: str = "maintain",
    spark_conn_id: str | None = None,
    spark_min_bytes: int = 0,
    spark_conf: Mapping[str, str] | None = None,
    planning_workers: int | None = None,
) -> tuple[TxnLogMaintenancePlanOperator, DAGNode, TxnLogMaintenanceHistoryOperator]:
    """plan >> maintain (mapped per table) >> history, inside the current DAG (module docstring).
    With `spark_conn_id`, the optimize stage sends each data rewrite reading `spark_min_bytes` or
    more to Spark (TxnLogPlannedActionsOperator); the others run in the task. `planning_workers`:
    processes the plan task plans the tables with (TxnLogMaintenancePlanOperator)."""
    flag("dry_run", dry_run)
    spark: dict[str, Any] = {
        "spark_conn_id": spark_conn_id,
        "spark_min_bytes": spark_min_bytes,
        "spark_conf": spark_conf,
    }
    history_uri = configured_history_uri() if history_uri is None else history_uri
    plan = TxnLogMaintenancePlanOperator(
        task_id="plan", tables=tables, txnlog_conn_id=txnlog_conn_id, settings=settings,
        byte_budget=byte_budget, catalog_conn_id=catalog_conn_id, history_uri=history_uri,
        history_conn_id=txnlog_conn_id, planning_workers=planning_workers,
    )  # fmt: skip
    stages = ("checkpoint", "optimize", "vacuum", "cleanup_log")
    extra: dict[str, Any] = {"pool": pool} if pool else {}

    result_ids: list[str] = []  # (the ids as created: prefixed by any group this is built in)

    @task_group(group_id=group_id)
    def maintain(item: Any) -> None:
        previous = None
        for stage in stages:
            routing: dict[str, Any] = spark if stage == "optimize" else {}
            op = TxnLogPlannedActionsOperator(
                task_id=stage, item=item, stage=stage, dry_run=dry_run, trigger_rule="all_done",
                **extra, **routing,
            )  # fmt: skip
            result_ids.append(op.task_id)
            if previous is not None:
                previous >> op
            previous = op

    group = maintain.expand(item=plan.output)
    history = TxnLogMaintenanceHistoryOperator(
        task_id="history", history_uri=history_uri, plan_task_id=plan.task_id,
        result_task_ids=result_ids, dry_run=dry_run, txnlog_conn_id=txnlog_conn_id,
    )  # fmt: skip
    group >> history
    plan >> history
    return plan, group, history
