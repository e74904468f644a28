"""Bad arguments to the public Spark API are refused up front, by name, and change nothing.

Every case asserts: the error is an `InvalidArgumentError` (a `TxnLogError`), its message names the
accepted forms, the table keeps its latest version and its files, no table appears where `create`
was asked for one, and no Spark job ran (each call runs under a Spark job group whose job ids are
read back from the status tracker).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, get_args

import pytest

from airflow_txnlog.engine import InvalidArgumentError, Table, TxnLogError
from airflow_txnlog.spark import SparkTable, WriteMode, to_hadoop_uri
from tests.spark.conftest import SCHEMA, make_rows

pytestmark = [pytest.mark.spark]

SET_FORMS = ["'*'", "mapping", "when_matched_update_all()"]
VALUES_FORMS = ["'*'", "mapping", "when_not_matched_insert_all()"]
WRITE_MODES = [repr(m) for m in get_args(WriteMode)]
POSITIVE = ["positive integer", "or None"]
SQL = ["non-empty Spark SQL string"]
UPDATE_SET = ["non-empty mapping {column: SQL expression}"]


@dataclass(frozen=True)
class Env:
    spark: Any
    path: Path  # a copy of the partitioned starting table (version 1)
    new_path: Path  # where a `create` case would put a table
    st: SparkTable
    df: Any  # rows of the table's schema, as a Spark DataFrame

    def merge(self) -> Any:
        return self.st.merge(self.df, "t.id = s.id")


@pytest.fixture
def env(spark, copy_table, tmp_path: Path) -> Env:
    path = copy_table(True, "t")
    df = spark.createDataFrame(make_rows(range(2300, 2310)))
    return Env(spark, path, tmp_path / "new", SparkTable(spark, str(path)), df)


@contextmanager
def _no_spark_job(spark: Any) -> Iterator[None]:
    sc = spark.sparkContext
    group = f"bad-input-{uuid.uuid4().hex}"
    sc.setJobGroup(group, "bad input must fail before any job")
    try:
        yield
    finally:
        sc.setLocalProperty("spark.jobGroup.id", None)
    assert list(sc.statusTracker().getJobIdsForGroup(group)) == []


def _files(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*")} if root.exists() else set()


def assert_refused(e: Env, call: Callable[[Env], object], accepted: list[str]) -> None:
    version, files = Table.open(str(e.path)).latest_version(), _files(e.path)
    with _no_spark_job(e.spark), pytest.raises(InvalidArgumentError) as info:
        call(e)
    assert isinstance(info.value, TxnLogError)
    for form in accepted:
        assert form in str(info.value), f"{form!r} not named in: {info.value}"
    assert Table.open(str(e.path)).latest_version() == version
    assert _files(e.path) == files
    assert not e.new_path.exists()


CASES: dict[str, tuple[Callable[[Env], object], list[str]]] = {
    # --- SparkTable(...), SparkTable.create(...), to_hadoop_uri(...)
    "storage_options=str": (
        lambda e: SparkTable(e.spark, str(e.path), storage_options="anon=false"),
        ["storage_options", "mapping {fsspec option: value}", "or None"],
    ),
    "storage_options int key": (
        lambda e: SparkTable(e.spark, str(e.path), storage_options={1: "x"}),
        ["keys must be non-empty strings", "mapping {fsspec option: value}"],
    ),
    "scheme_map=str": (
        lambda e: SparkTable(e.spark, str(e.path), scheme_map="s3a"),
        ["scheme_map", "mapping {fsspec scheme: Hadoop scheme}", "{'s3': 's3a'}"],
    ),
    "scheme_map=list of pairs": (
        lambda e: SparkTable(e.spark, str(e.path), scheme_map=[("s3", "s3a")]),
        ["mapping {fsspec scheme: Hadoop scheme}"],
    ),
    "scheme_map empty scheme": (
        lambda e: SparkTable(e.spark, str(e.path), scheme_map={"file": ""}),
        ["non-empty Hadoop scheme"],
    ),
    "table=str": (
        lambda e: SparkTable(e.spark, str(e.path), table="t"),
        ["engine Table or None"],
    ),
    "to_hadoop_uri scheme_map=str": (
        lambda e: to_hadoop_uri("s3://bucket/t", "s3a"),
        ["mapping {fsspec scheme: Hadoop scheme}"],
    ),
    "to_hadoop_uri uri=None": (
        lambda e: to_hadoop_uri(None),
        ["non-empty string"],
    ),
    "create partition_by=str": (
        lambda e: SparkTable.create(e.spark, str(e.new_path), SCHEMA, partition_by="part"),
        ["list of column names"],
    ),
    "create properties=str": (
        lambda e: SparkTable.create(e.spark, str(e.new_path), SCHEMA, properties="delta.appendOnly=true"),
        ["mapping {property: value}", "or None"],
    ),
    "create properties int key": (
        lambda e: SparkTable.create(e.spark, str(e.new_path), SCHEMA, properties={1: "x"}),
        ["keys must be non-empty strings"],
    ),
    "create properties with a typo": (  # (issue 38: Delta refuses unknown delta.* keys; so do we)
        lambda e: SparkTable.create(
            e.spark, str(e.new_path), SCHEMA, properties={"delta.enableRowTrackng": "true"}
        ),
        ["unknown Delta table property", "Did you mean 'delta.enableRowTracking'"],
    ),
    "create maintenance property not a number": (
        lambda e: SparkTable.create(
            e.spark, str(e.new_path), SCHEMA, properties={"txnlog.maintenance.quietMinutes": "abc"}
        ),
        ["quietMinutes must be a finite float"],
    ),
    "create scheme_map=str": (
        lambda e: SparkTable.create(e.spark, str(e.new_path), SCHEMA, scheme_map="s3a"),
        ["mapping {fsspec scheme: Hadoop scheme}"],
    ),
    # --- write
    "write mode unknown": (lambda e: e.st.write(e.df, mode="upsert"), WRITE_MODES),
    "write mode capitalised": (lambda e: e.st.write(e.df, mode="Overwrite"), WRITE_MODES),
    "write df=None": (lambda e: e.st.write(None), ["Spark DataFrame"]),
    "write partition_by=str": (lambda e: e.st.write(e.df, partition_by="part"), ["list of column names"]),
    "write merge_schema=str": (lambda e: e.st.write(e.df, merge_schema="false"), ["True or False"]),
    "write replace_where empty": (lambda e: e.st.write(e.df, mode="overwrite", replace_where=""), SQL),
    "write replace_where on append": (
        lambda e: e.st.write(e.df, replace_where="id < 5"),
        ["mode='overwrite'"],
    ),
    "write txn=str": (lambda e: e.st.write(e.df, txn="ingest"), ["pair", "('ingest', 42)"]),
    "write txn version=bool": (lambda e: e.st.write(e.df, txn=("ingest", True)), ["int >= 0"]),
    "write txn negative": (lambda e: e.st.write(e.df, txn=("ingest", -1)), ["int >= 0"]),
    # --- delete / update
    "delete predicate empty": (lambda e: e.st.delete(""), [*SQL, "or None"]),
    "delete predicate int": (lambda e: e.st.delete(5), SQL),
    "update set=str": (lambda e: e.st.update(None, "all"), UPDATE_SET),
    "update set=list": (lambda e: e.st.update(None, [("value", "1")]), UPDATE_SET),
    "update set empty": (lambda e: e.st.update(None, {}), ["must not be empty", *UPDATE_SET]),
    "update set int key": (lambda e: e.st.update(None, {1: "2"}), ["keys must be non-empty strings"]),
    "update set empty expression": (lambda e: e.st.update(None, {"value": " "}), SQL),
    "update set unknown column": (
        lambda e: e.st.update(None, {"nope": "1"}),
        ["unknown column", "columns are"],
    ),
    "update set column twice": (
        lambda e: e.st.update(None, {"value": "1", "VALUE": "2"}),
        ["'value' is set twice"],
    ),
    "update predicate empty": (lambda e: e.st.update("", {"value": "1"}), SQL),
    # --- merge
    "merge set='all'": (lambda e: e.merge().when_matched_update(set="all"), SET_FORMS),
    "merge set empty": (lambda e: e.merge().when_matched_update(set={}), ["must not be empty", *SET_FORMS]),
    "merge set=list": (lambda e: e.merge().when_matched_update(set=["value"]), SET_FORMS),
    "merge set value not str": (lambda e: e.merge().when_matched_update(set={"value": 1}), SQL),
    "merge values='ALL'": (
        lambda e: e.merge().when_not_matched_insert(values="ALL"),
        VALUES_FORMS,
    ),
    "merge values=None": (
        lambda e: e.merge().when_not_matched_insert(values=None),
        VALUES_FORMS,
    ),
    "merge condition empty": (lambda e: e.merge().when_matched_delete(condition=""), [*SQL, "or None"]),
    "merge condition bool": (lambda e: e.merge().when_matched_update_all(condition=True), SQL),
    "merge on empty": (lambda e: e.st.merge(e.df, "  "), SQL),
    "merge source not a DataFrame": (lambda e: e.st.merge(None, "t.id = s.id"), ["Spark DataFrame"]),
    "merge alias with backtick": (
        lambda e: e.st.merge(e.df, "t.id = s.id", source_alias="s`"),
        ["name without backticks"],
    ),
    "merge unknown column (at execute)": (
        lambda e: e.merge().when_matched_update(set={"nope": "s.value"}).execute(),
        ["unknown column", "columns are"],
    ),
    "merge * with source lacking columns (at execute)": (
        lambda e: e.st.merge(e.df.drop("name"), "t.id = s.id").when_not_matched_insert_all().execute(),
        ["source lacks target columns"],
    ),
    # --- optimize
    "optimize target_file_size=0": (lambda e: e.st.optimize(target_file_size=0), POSITIVE),
    "optimize target_file_size=str": (lambda e: e.st.optimize(target_file_size="1000"), POSITIVE),
    "optimize target_file_size=bool": (lambda e: e.st.optimize(target_file_size=True), POSITIVE),
    "optimize target_file_size=float": (lambda e: e.st.optimize(target_file_size=1.5), POSITIVE),
    "optimize where empty": (lambda e: e.st.optimize(where=""), [*SQL, "or None"]),
}


@pytest.mark.parametrize("case", list(CASES))
def test_bad_input_is_refused_before_anything_runs(env: Env, case: str) -> None:
    call, accepted = CASES[case]
    assert_refused(env, call, accepted)


def test_the_job_check_sees_jobs(spark) -> None:
    """The no-job assertion is not vacuous: a job run in the group is seen."""
    with pytest.raises(AssertionError), _no_spark_job(spark):
        spark.range(3).count()
