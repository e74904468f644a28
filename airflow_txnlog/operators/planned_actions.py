"""The stage tasks of planned maintenance: `TxnLogPlannedActionsOperator` runs one stage
(`checkpoint`, `optimize`, `vacuum`, `cleanup_log`) of one table's work item
(airflow_txnlog.operators.planned_maintenance builds the DAG around it).

    actions   the stage's kinds of the item's actions, in plan order (a full vacuum supersedes a
              lite one: operators._maintenance_work.stage_actions); a rewrite's paths come back from
              the run's plan file (operators._plan_files), read once, only when an action needs them
    runner    the optimize stage sends each data rewrite reading `spark_min_bytes` or more to Spark
              (`spark_conn_id`: SparkTable.run_maintenance, the engine still commits), the rest run in
              this process (`Table.run_maintenance`); a session is started at the first Spark
              rewrite and stopped after the stage; a dry run starts none (it reads no rows)
    results   one per action {table, id, kind, status, runner, seconds, result, error}: `done`,
              `dry_run`, `conflict` (a concurrent commit took its files: the next plan sees the new
              state), `failed` (the error, the table's next stage still runs), `superseded`
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from airflow.sdk import BaseOperator, Context

from airflow_txnlog.arguments import flag, invalid, str_mapping
from airflow_txnlog.hooks.txnlog import TxnLogHook

DEFAULT_HISTORY_CONN = TxnLogHook.default_conn_name


class TxnLogPlannedActionsOperator(BaseOperator):
    """Run one stage (`checkpoint`, `optimize`, `vacuum`, `cleanup_log`) of one table's work item.

    Returns one result per action: {table, id, kind, status, seconds, result, error, runner}.

    :param spark_conn_id: a `spark` (master URL: a standalone cluster, YARN, k8s, local) or
        `spark_connect` connection of the apache-spark provider; the optimize stage's data rewrites
        whose bytes read reach `spark_min_bytes` then run on Spark (`SparkTable.run_maintenance`:
        Spark reads and writes the files, this task only plans the job and commits), the rest in
        this process. None (default): every rewrite runs in this process.
    :param spark_min_bytes: the bytes an action reads (its plan's `cost.bytes_read`) from which it
        goes to Spark; 0: every rewrite. Dry runs never start Spark (a dry run reads no rows).
    :param spark_conf: Spark settings over the connection's extras.
    """

    template_fields: Sequence[str] = ("item",)

    def __init__(
        self,
        *,
        item: Any,
        stage: str,
        dry_run: bool = True,
        spark_conn_id: str | None = None,
        spark_min_bytes: int = 0,
        spark_conf: Mapping[str, str] | None = None,
        **kwargs: Any,
    ) -> None:
        from airflow_txnlog.operators._maintenance_work import STAGES  # noqa: PLC0415

        super().__init__(**kwargs)
        if stage not in STAGES:
            raise invalid(f"stage must be one of {list(STAGES)}, got {stage!r}")
        self.item = item
        self.stage = stage
        self.is_dry_run = flag("dry_run", dry_run)
        self.spark_conn_id, self.spark_min_bytes = _spark_routing(spark_conn_id, spark_min_bytes)
        self.spark_conf = str_mapping("spark_conf", spark_conf)

    def execute(self, context: Context) -> list[dict[str, Any]]:
        from airflow_txnlog.operators._maintenance_work import stage_actions  # noqa: PLC0415

        item = self.item
        if not isinstance(item, Mapping) or "table" not in item:
            raise invalid(f"item must be a work item of TxnLogMaintenancePlanOperator, got {item!r}")
        todo, superseded = stage_actions(item, self.stage)
        base = {"table": item["table"]}
        out = [{**base, "id": a["id"], "kind": a["kind"], "status": "superseded",
                "reason": "a full vacuum runs instead"} for a in superseded]  # fmt: skip
        if todo:
            hook = TxnLogHook(txnlog_conn_id=item.get("conn_id") or TxnLogHook.default_conn_name)
            out += [{**base, **r} for r in self._run_all(hook, hook.get_table(item["table"]), item, todo)]
        return out

    def _on_spark(self, action: Mapping[str, Any]) -> bool:
        from airflow_txnlog.operators._maintenance_work import DATA_KINDS, bytes_read  # noqa: PLC0415

        return (
            self.spark_conn_id is not None
            and action.get("kind") in DATA_KINDS
            and bytes_read(action) >= self.spark_min_bytes
        )

    def _run_all(
        self, hook: TxnLogHook, table: Any, item: Mapping[str, Any], todo: Sequence[Mapping[str, Any]]
    ) -> list[dict[str, Any]]:
        """The actions in plan order, their paths back from the plan file; a Spark session started at
        the first one Spark writes (a dry run reads no rows, so starts none) and stopped after it."""
        from airflow_txnlog.operators._maintenance_work import with_paths  # noqa: PLC0415

        out = []
        paths, failure = _plan_paths(item, todo)
        with contextlib.ExitStack() as stack:
            spark_table = None
            for planned in todo:
                action = with_paths(planned, paths)
                runner, run = "engine", table.run_maintenance
                if failure is not None and str(action["id"]) in failure[1]:
                    run = _failing(failure[0])
                if self._on_spark(action):
                    runner = "spark"
                    if not self.is_dry_run:
                        spark_table = spark_table or self._spark_table(stack, hook, table)
                        run = spark_table.run_maintenance
                out.append(self._run(run, table.uri, action, runner))
        return out

    def _spark_table(self, stack: contextlib.ExitStack, hook: TxnLogHook, table: Any) -> Any:
        from airflow_txnlog.operators._spark_session import spark_session  # noqa: PLC0415
        from airflow_txnlog.spark import SparkTable  # noqa: PLC0415 - pyspark only at run time

        app = f"{self.dag_id}-{self.task_id}"
        spark = stack.enter_context(spark_session(self.spark_conn_id, self.spark_conf, app))
        options = hook.storage_options_for(table.uri) or None
        return SparkTable(spark, table.uri, storage_options=options, table=table)

    def _run(
        self, run: Callable[..., dict[str, Any]], uri: str, action: Mapping[str, Any], runner: str
    ) -> dict[str, Any]:
        from airflow_txnlog.engine import CommitConflictError, TxnLogError  # noqa: PLC0415

        started = time.monotonic()
        head = {"id": action["id"], "kind": action["kind"], "runner": runner}
        try:
            result = run(action, dry_run=self.is_dry_run)
        except CommitConflictError as exc:
            self.log.warning("%s of %s lost to a concurrent commit: %s", action["kind"], uri, exc)
            return {**head, "status": "conflict", "error": str(exc), "seconds": _since(started)}
        except (TxnLogError, OSError) as exc:
            self.log.error("%s of %s failed: %s", action["kind"], uri, exc)
            return {
                **head,
                "status": "failed",
                "error": f"{type(exc).__name__}: {exc}",
                "seconds": _since(started),
            }
        self.log.info("%s of %s (%s): %s", action["kind"], uri, runner, result)
        status = "dry_run" if self.is_dry_run else "done"
        return {**head, "status": status, "result": result, "seconds": _since(started)}


def _plan_paths(
    item: Mapping[str, Any], todo: Sequence[Mapping[str, Any]]
) -> tuple[dict[str, Any], tuple[Exception, set[str]] | None]:
    """({action id: paths} from the item's plan file, read only when an action to run needs it;
    the error that kept it from being read, and the ids it fails)."""
    from airflow_txnlog.engine import TxnLogError  # noqa: PLC0415
    from airflow_txnlog.operators._maintenance_work import DATA_KINDS  # noqa: PLC0415
    from airflow_txnlog.operators._plan_files import plan_storage, read_paths  # noqa: PLC0415

    ref = item.get("plan_file")
    needing = {
        str(a["id"]) for a in todo if a.get("kind") in DATA_KINDS and "bins" not in a and "files" not in a
    }
    if not needing or not isinstance(ref, Mapping):
        return {}, None
    try:
        hook = TxnLogHook(txnlog_conn_id=ref.get("conn_id") or DEFAULT_HISTORY_CONN)
        return read_paths(plan_storage(hook, str(ref["uri"])), str(ref["key"]), str(item["table"])), None
    except (TxnLogError, OSError) as exc:
        return {}, (exc, needing)


def _failing(exc: Exception) -> Callable[..., dict[str, Any]]:
    def run(*args: Any, **kwargs: Any) -> dict[str, Any]:
        raise exc

    return run


def _spark_routing(conn_id: object, min_bytes: object) -> tuple[str | None, int]:
    if conn_id is not None and (not isinstance(conn_id, str) or not conn_id.strip()):
        raise invalid(f"spark_conn_id must be a connection id or None (no Spark), got {conn_id!r}")
    if isinstance(min_bytes, bool) or not isinstance(min_bytes, int) or min_bytes < 0:
        raise invalid(f"spark_min_bytes must be an int >= 0 (bytes an action reads), got {min_bytes!r}")
    return conn_id, min_bytes


def _since(started: float) -> float:
    return round(time.monotonic() - started, 3)
