"""Bad input catalogue for the Airflow layer: operators, sensor, triggers, hook and callback.

Each case raises `InvalidArgumentError` (a `TxnLogError`) whose message names what is accepted, before
any work: when the operator is built for plain values, at the start of `execute` for templated ones
(rendered here with `render_template_fields`). Every test compares the files of a real table before
and after; the Spark operators must fail before a Spark session is asked for (no pyspark needed).
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, get_args

import pytest

from airflow_txnlog import arguments, engine
from airflow_txnlog.callbacks import restore_on_failure
from airflow_txnlog.engine import InvalidArgumentError, Table, TxnLogError
from airflow_txnlog.hooks.txnlog import TxnLogHook
from airflow_txnlog.operators import spark as spark_operators
from airflow_txnlog.operators.maintenance import (
    TxnLogCleanupLogOperator,
    TxnLogOptimizeOperator,
    TxnLogVacuumOperator,
)
from airflow_txnlog.operators.savepoint import TxnLogRestoreOperator
from airflow_txnlog.operators.spark import (
    TxnLogSparkDeleteOperator,
    TxnLogSparkMergeOperator,
    TxnLogSparkUpdateOperator,
    TxnLogSparkWriteOperator,
)
from airflow_txnlog.sensors.version import TxnLogVersionSensor
from airflow_txnlog.triggers.version import TxnLogVersionEventTrigger, TxnLogVersionTrigger
from tests.conftest import SCHEMA, rows

pytestmark = pytest.mark.airflow

WRITE_MODES = ("'append' or 'overwrite'",)
POLICIES = ("'fail' or 'force'",)
STR_MAP = ("mapping of str to str",)
OPS = ("list of operation names",)


class Guard:
    """A table with two commits; `unchanged()` asserts that no file under it was added or changed."""

    def __init__(self, root: Path) -> None:
        self.uri = str(root)
        table = Table.create(self.uri, schema=SCHEMA, partition_by=["part"])
        table.write(rows([1, 2], "a"))
        table.write(rows([3], "b"))
        self.before = self.files()

    def files(self) -> dict[str, int]:
        root = Path(self.uri)
        return {str(p.relative_to(root)): p.stat().st_size for p in root.rglob("*") if p.is_file()}

    def unchanged(self) -> None:
        assert self.files() == self.before


@pytest.fixture
def guard(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Guard]:
    def no_session(*args: Any) -> Any:
        raise AssertionError("a Spark session was asked for: the bad argument got past the checks")

    monkeypatch.setattr(spark_operators, "spark_session", no_session)
    g = Guard(tmp_path / "t")
    yield g
    g.unchanged()


@contextlib.contextmanager
def refused(*accepted: str) -> Iterator[None]:
    """Expect `InvalidArgumentError` (a `TxnLogError`) whose message names each accepted form."""
    with pytest.raises(InvalidArgumentError) as info:
        yield
    assert isinstance(info.value, TxnLogError)
    for fragment in accepted:
        assert fragment in str(info.value), (fragment, str(info.value))


def test_the_literals_are_the_engines() -> None:
    """The Airflow layer keeps its own copies (DAG files must parse without the engine): same values."""
    assert get_args(arguments.WriteMode) == get_args(engine.WriteMode)
    assert get_args(arguments.ForeignCommitsPolicy) == get_args(engine.ForeignCommitsPolicy)


# ------------------------------------------------------------------ refused when the operator is built
def _write(uri: str, **kwargs: Any) -> Any:
    return TxnLogSparkWriteOperator(task_id="w", table_uri=uri, source_path="/in", **kwargs)


def _merge(uri: str, **kwargs: Any) -> Any:
    return TxnLogSparkMergeOperator(task_id="m", table_uri=uri, on="t.id = s.id", source="SELECT 1", **kwargs)


BUILD_CASES: dict[str, tuple[Callable[[str], Any], tuple[str, ...]]] = {
    "write mode": (lambda u: _write(u, mode="upsert"), WRITE_MODES),
    "write mode not a string": (lambda u: _write(u, mode=None), WRITE_MODES),
    "write replace_where with append": (lambda u: _write(u, replace_where="part = 'a'"), ("'overwrite'",)),
    "write partition_by a bare string": (lambda u: _write(u, partition_by="part"), ("list of column names",)),
    "write spark_conf values": (lambda u: _write(u, spark_conf={"spark.sql.shuffle.partitions": 4}), STR_MAP),
    "write spark_conf not a mapping": (lambda u: _write(u, spark_conf="spark.a=b"), STR_MAP),
    "write source_options values": (lambda u: _write(u, source_options={"header": True}), STR_MAP),
    "write source_format": (lambda u: _write(u, source_format=""), ("Spark data source name",)),
    "write two sources": (lambda u: _write(u, source="SELECT 1"), ("exactly one of source",)),
    "merge update clause word": (lambda u: _merge(u, when_matched_update="all"), ("'*'", "mapping")),
    "merge insert clause values": (lambda u: _merge(u, when_not_matched_insert={"id": 1}), STR_MAP),
    "merge delete clause": (lambda u: _merge(u, when_matched_delete=1), ("True, False or a condition",)),
    "merge by-source delete clause": (
        lambda u: _merge(u, when_not_matched_by_source_delete=None),
        ("when_not_matched_by_source_delete", "True, False or a condition"),
    ),
    "merge by-source update values": (
        lambda u: _merge(u, when_not_matched_by_source_update={"part": 1}),
        STR_MAP,
    ),
    "merge by-source condition without its clause": (
        lambda u: _merge(u, when_not_matched_by_source_update_condition="t.id > 1"),
        ("needs when_not_matched_by_source_update",),
    ),
    "merge by-source update star": (
        lambda u: _merge(u, when_not_matched_by_source_update="*"),
        STR_MAP,
    ),
    "update set values": (
        lambda u: TxnLogSparkUpdateOperator(task_id="u", table_uri=u, set={"value": 0.5}),
        STR_MAP,
    ),
    "update set not a mapping": (
        lambda u: TxnLogSparkUpdateOperator(task_id="u", table_uri=u, set=["value"]),
        STR_MAP,
    ),
    "delete spark_conf": (
        lambda u: TxnLogSparkDeleteOperator(task_id="d", table_uri=u, spark_conf={1: "x"}),
        STR_MAP,
    ),
    "optimize spark_conf": (
        lambda u: TxnLogOptimizeOperator(task_id="o", table_uri=u, spark_conf={"a": None}),
        STR_MAP,
    ),
    "vacuum retention": (
        lambda u: TxnLogVacuumOperator(task_id="v", table_uri=u, retention_hours=-1, dry_run=False),
        ("number of hours >= 0",),
    ),
    "cleanup retention": (
        lambda u: TxnLogCleanupLogOperator(task_id="c", table_uri=u, retention_hours="soon"),
        ("number of hours >= 0",),
    ),
    "restore policy": (
        lambda u: TxnLogRestoreOperator(
            task_id="r", table_uri=u, savepoint_name="sp", on_foreign_commits="skip"
        ),
        POLICIES,
    ),
    "restore_on_failure policy": (lambda u: restore_on_failure(u, on_foreign_commits="Force"), POLICIES),
    "sensor operations": (
        lambda u: TxnLogVersionSensor(task_id="s", table_uri=u, operations=["MERGE", 1]),
        OPS,
    ),
    "trigger operations": (
        lambda u: TxnLogVersionTrigger(table_uri=u, after_version=0, operations=[""]),
        OPS,
    ),
    "event trigger operations": (lambda u: TxnLogVersionEventTrigger(table_uri=u, operations={"op": 1}), OPS),
    "event trigger watcher_id": (
        lambda u: TxnLogVersionEventTrigger(table_uri=u, watcher_id="a b"),
        ("letters, digits",),
    ),
}


@pytest.mark.parametrize("case", list(BUILD_CASES))
def test_bad_argument_is_refused_when_built(guard: Guard, case: str) -> None:
    build, accepted = BUILD_CASES[case]
    with refused(*accepted):
        build(guard.uri)


def test_good_arguments_build(guard: Guard) -> None:
    """The checks accept what the docs promise (literal choices, '*', templates, one operation name)."""
    _write(guard.uri, mode="overwrite", replace_where="part = 'a'", partition_by=["part"])
    _write(guard.uri, mode="{{ params.mode }}", source_options={"header": "true"})
    _merge(
        guard.uri, when_matched_update="*", when_not_matched_insert={"id": "s.id"}, when_matched_delete="s.x"
    )
    TxnLogRestoreOperator(task_id="r", table_uri=guard.uri, savepoint_name="sp", on_foreign_commits="force")
    assert TxnLogVersionTrigger(table_uri=guard.uri, after_version=0, operations="MERGE").operations == [
        "MERGE"
    ]
    assert TxnLogVacuumOperator(task_id="v", table_uri=guard.uri, retention_hours=24).retention_hours == 24.0


# ------------------------------------------------------------------ templated: refused after rendering
def _rendered(op: Any, **params: Any) -> Any:
    op.render_template_fields({"params": params})
    return op


def test_templated_write_mode_is_checked_before_the_table_is_created(guard: Guard, tmp_path: Path) -> None:
    missing = tmp_path / "new_table"  # a write creates a missing table: it must not get that far
    op = _rendered(_write(str(missing), mode="{{ params.mode }}"), mode="upsert")
    with refused(*WRITE_MODES):
        op.execute({})
    op = _rendered(_write(str(missing), mode="{{ params.mode }}", replace_where="part = 'a'"), mode="append")
    with refused("'overwrite'"):
        op.execute({})
    assert not missing.exists()


@pytest.mark.parametrize("operator", [TxnLogVacuumOperator, TxnLogCleanupLogOperator])
def test_templated_retention_is_checked_after_rendering(guard: Guard, operator: Any) -> None:
    op = _rendered(operator(task_id="m", table_uri=guard.uri, retention_hours="{{ params.h }}"), h="-1")
    with refused("number of hours >= 0"):
        op.execute({})
    good = _rendered(operator(task_id="m", table_uri=guard.uri, retention_hours="{{ params.h }}"), h="720")
    assert good.execute({})["dry_run"] is True  # rendered text is read as hours; both are dry runs by default


def test_templated_restore_version_is_checked_before_the_table_is_read(guard: Guard) -> None:
    op = _rendered(
        TxnLogRestoreOperator(task_id="r", table_uri=guard.uri, version="{{ params.v }}"), v="latest"
    )
    with refused("integer table version"):
        op.execute({})


def test_templated_sensor_arguments_are_checked_after_rendering(guard: Guard) -> None:
    op = _rendered(
        TxnLogVersionSensor(task_id="s", table_uri=guard.uri, operations="{{ params.ops }}"), ops=" "
    )
    with refused(*OPS):
        op.execute({})
    op = _rendered(
        TxnLogVersionSensor(task_id="s", table_uri=guard.uri, after_version="{{ params.v }}"), v="one"
    )
    with refused("integer table version"):
        op.execute({})


# ------------------------------------------------------------------ the hook's connection extras
def _hook(monkeypatch: pytest.MonkeyPatch, extra: Any) -> TxnLogHook:
    conn = {"conn_type": "txnlog", "extra": extra if isinstance(extra, str) else json.dumps(extra)}
    monkeypatch.setenv("AIRFLOW_CONN_LAKE", json.dumps(conn))
    return TxnLogHook(txnlog_conn_id="lake")


def test_connection_extra_must_be_a_json_object(guard: Guard, monkeypatch: pytest.MonkeyPatch) -> None:
    with refused("must be a JSON object of fsspec storage options"):
        _hook(monkeypatch, ["anon", True]).get_table(guard.uri)


@pytest.mark.parametrize("value", ["maybe", 1, {"on": True}])
def test_single_writer_must_be_a_boolean(guard: Guard, monkeypatch: pytest.MonkeyPatch, value: Any) -> None:
    with refused("true or false"):
        _hook(monkeypatch, {"single_writer": value}).get_table(guard.uri)


@pytest.mark.parametrize(
    ("value", "expected"), [("false", False), ("True", True), (None, False), (True, True)]
)
def test_single_writer_text_from_uri_connections(
    monkeypatch: pytest.MonkeyPatch, value: Any, expected: bool
) -> None:
    """A URI-style connection holds "false" as text: it used to count as True (a non-empty string)."""
    assert _hook(monkeypatch, {"single_writer": value}).single_writer is expected
