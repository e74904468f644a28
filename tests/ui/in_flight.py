"""A run of `ui_maintenance` in flight, written straight into the api-server's metadata database as
the scheduler and the tasks would leave it (run in the server's environment, one step per call):

    python -m tests.ui.in_flight planned '<items as JSON>'   # the run, the plan's XCom `items`, the
                                                            # mapped stages (table 0's checkpoint runs)
    python -m tests.ui.in_flight running '[]'               # table 1: checkpoint done, optimize runs
    python -m tests.ui.in_flight recorded '[]'              # the history task has finished

The DAG is the real `planned_maintenance` layout (tests/ui/dags), so its task ids and operators are
what the Tables view looks for.
"""

from __future__ import annotations

import datetime as dt
import json
import sys

DAG_ID, RUN_ID = "ui_maintenance", "inflight_1"
STAGES = ("checkpoint", "optimize", "vacuum", "cleanup_log")


def main(step: str, items: list[dict[str, object]]) -> None:
    from airflow.models.serialized_dag import SerializedDagModel  # noqa: PLC0415
    from airflow.models.taskinstance import TaskInstance as TI  # noqa: PLC0415
    from airflow.models.xcom import XComModel  # noqa: PLC0415
    from airflow.utils.session import create_session  # noqa: PLC0415
    from airflow.utils.state import DagRunState  # noqa: PLC0415
    from airflow.utils.types import DagRunTriggeredByType, DagRunType  # noqa: PLC0415
    from sqlalchemy import update  # noqa: PLC0415

    now = dt.datetime.now(dt.UTC)
    with create_session() as session:

        def set_state(task_id: str, map_index: int, state: str) -> None:
            session.execute(
                update(TI)
                .where(
                    TI.dag_id == DAG_ID, TI.run_id == RUN_ID, TI.task_id == task_id, TI.map_index == map_index
                )
                .values(state=state, start_date=now)
            )

        if step == "planned":
            dag = SerializedDagModel.get_dag(DAG_ID, session=session)
            assert dag is not None
            run = dag.create_dagrun(
                run_id=RUN_ID, run_after=now, run_type=DagRunType.MANUAL,
                triggered_by=DagRunTriggeredByType.TEST, state=DagRunState.RUNNING, session=session,
            )  # fmt: skip
            XComModel.set("items", items, dag_id=DAG_ID, task_id="plan", run_id=RUN_ID, session=session)
            set_state("plan", -1, "success")
            for stage in STAGES:  # the group expanded over the items with actions
                task = dag.get_task(f"maintain.{stage}")
                session.execute(
                    update(TI).where(TI.run_id == RUN_ID, TI.task_id == task.task_id).values(map_index=0)
                )
                for index in range(1, sum(1 for i in items if i["actions"])):
                    session.add(
                        TI(task, dag_version_id=run.created_dag_version_id, run_id=RUN_ID, map_index=index)
                    )
            session.flush()
            set_state("maintain.checkpoint", 0, "running")
        elif step == "running":
            set_state("maintain.checkpoint", 1, "success")
            set_state("maintain.optimize", 1, "running")
        elif step == "recorded":
            set_state("history", -1, "success")
        else:
            raise SystemExit(f"unknown step {step!r}")


if __name__ == "__main__":
    main(sys.argv[1], json.loads(sys.argv[2]))
