"""The maintenance operators' execute() on a local table, without a DAG run (no Spark needed).

Vacuum and log cleanup must default to safe (dry run / retention on), report what they did in the
XCom dict, and the health report must be the engine's.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import pytest

from airflow_txnlog.engine import RetentionTooShortError, Table
from airflow_txnlog.engine.storage import LOG_DIR
from airflow_txnlog.operators.maintenance import (
    TxnLogCheckpointOperator,
    TxnLogCleanupLogOperator,
    TxnLogHealthOperator,
    TxnLogVacuumOperator,
)
from tests.conftest import SCHEMA, rows

CONTEXT: Any = {}  # these operators read nothing from the context when they emit no asset event


@pytest.fixture
def table(tmp_path: Path) -> Path:
    """Versions 0-3; the overwrite at version 3 replaces both files (two tombstones)."""
    t = Table.create(str(tmp_path / "t"), schema=SCHEMA, partition_by=["part"])
    t.write(rows([1], "a"))
    t.write(rows([2], "b"))
    t.write(rows([3], "a"), mode="overwrite")
    return tmp_path / "t"


def test_checkpoint_operator_checkpoints_the_latest_version(table: Path) -> None:
    out = TxnLogCheckpointOperator(task_id="cp", table_uri=str(table)).execute(CONTEXT)
    assert out == {"version": 3}
    assert Table.open(str(table)).snapshot().checkpoint_version == 3


def test_vacuum_operator_is_a_dry_run_with_retention_checks_by_default(table: Path) -> None:
    op = TxnLogVacuumOperator(task_id="v", table_uri=str(table))
    assert op.execute(CONTEXT)["num_files"] == 0  # tombstones are younger than 7 days
    with pytest.raises(RetentionTooShortError):
        TxnLogVacuumOperator(task_id="v", table_uri=str(table), retention_hours=0).execute(CONTEXT)
    dry = TxnLogVacuumOperator(
        task_id="v", table_uri=str(table), retention_hours=0, enforce_retention=False
    ).execute(CONTEXT)
    assert (dry["dry_run"], dry["num_files"], dry["deleted"], dry["version"]) == (True, 2, 0, None)
    assert Table.open(str(table)).latest_version() == 3  # a dry run commits nothing


def test_vacuum_operator_executes_when_asked(table: Path) -> None:
    out = TxnLogVacuumOperator(
        task_id="v", table_uri=str(table), retention_hours=0, enforce_retention=False, dry_run=False
    ).execute(CONTEXT)
    assert (out["dry_run"], out["deleted"], out["version"]) == (False, 2, 5)  # VACUUM START 4, END 5
    assert Table.open(str(table)).snapshot().to_arrow().column("id").to_pylist() == [3]


def test_cleanup_log_operator_reports_stale_temp_files(table: Path) -> None:
    stale = table / LOG_DIR / ".tmp" / ".00000000000000000004.json.aa.tmp"
    stale.write_bytes(b"{")
    os.utime(stale, (time.time() - 7200, time.time() - 7200))
    out = TxnLogCleanupLogOperator(task_id="c", table_uri=str(table)).execute(CONTEXT)
    assert out == {"num_files": 0, "num_temp_files": 1, "checkpoint_version": None, "dry_run": True}
    assert stale.exists()  # a dry run by default
    out = TxnLogCleanupLogOperator(task_id="c", table_uri=str(table), dry_run=False).execute(CONTEXT)
    assert out == {"num_files": 0, "num_temp_files": 1, "checkpoint_version": None, "dry_run": False}
    assert not stale.exists()


def test_health_operator_pushes_the_engine_report(table: Path) -> None:
    out = TxnLogHealthOperator(task_id="h", table_uri=str(table)).execute(CONTEXT)
    assert out == Table.open(str(table)).health().to_dict()
    assert (out["version"], out["num_files"], out["tombstones"]) == (3, 1, 2)


def test_cleanup_log_operator_says_why_nothing_was_removed(
    table: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """No checkpoint older than the retention: the task log says so (it once said "below checkpoint None")."""
    Table.open(str(table)).checkpoint()  # checkpoint at 3, too new for the 30-day default retention
    out = TxnLogCleanupLogOperator(task_id="c", table_uri=str(table)).execute(CONTEXT)
    assert (out["num_files"], out["checkpoint_version"]) == (0, None)
    logged = capsys.readouterr().out
    assert "log cleanup: nothing to remove, no checkpoint is older than the log retention" in logged
    assert "(the table's: 30 days unless set)" in logged and "None" not in logged
    TxnLogCleanupLogOperator(task_id="c", table_uri=str(table), retention_hours=48).execute(CONTEXT)
    assert "older than the log retention (48 hours)" in capsys.readouterr().out
    out = TxnLogCleanupLogOperator(task_id="c", table_uri=str(table), retention_hours=0).execute(CONTEXT)
    # commits 0..2 and the version checksum beside each
    assert (out["num_files"], out["checkpoint_version"], out["dry_run"]) == (6, 3, True)
    assert "log cleanup would remove 6 file(s) below checkpoint 3" in capsys.readouterr().out
    assert (table / LOG_DIR / f"{0:020d}.json").exists()
    out = TxnLogCleanupLogOperator(
        task_id="c", table_uri=str(table), retention_hours=0, dry_run=False
    ).execute(CONTEXT)
    assert (out["num_files"], out["checkpoint_version"]) == (6, 3)  # commits 0-2 (+ .crc) below 3
    assert "log cleanup removed 6 file(s) below checkpoint 3" in capsys.readouterr().out
