"""The Spark mistakes a newcomer makes (issue 30), each answered by a `TxnLogError` whose first line
names the option, column or clause and what is valid, before any job runs: nothing committed, no
internal plan column (`_txnlog_*`) in the message, and none of PySpark's ERROR log lines printed.

The data source used through Spark's own reader / writer reports our error inside Spark's
AnalysisException (Spark chooses that class); `txnlog_errors()` gives ours back.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from pyspark.errors import AnalysisException
from pyspark.logger import PySparkLogger

from airflow_txnlog.engine import InvalidArgumentError, PredicateError, TxnLogError
from airflow_txnlog.spark import SparkTable, register, txnlog_errors
from airflow_txnlog.spark.errors import carried_error

pytestmark = [pytest.mark.spark]
COLUMNS = "columns: id, amount, day"


@pytest.fixture
def table(spark: Any, tmp_path: Path) -> SparkTable:
    df = spark.createDataFrame([(1, 2.0, "a"), (2, 5.0, "b")], "id long, amount double, day string")
    st = SparkTable.create(spark, str(tmp_path / "t"), df, partition_by=["day"])
    st.write(df)
    return st


def _first_line(exc: BaseException) -> str:
    return str(exc).splitlines()[0]


def _refused(st: SparkTable, call: Any, kind: type[TxnLogError], capfd: pytest.CaptureFixture[str]) -> str:
    """Run the mistake; check what every answer must be; return the error's first line."""
    before = st.table.latest_version()
    with pytest.raises(kind) as err:
        call()
    assert st.table.latest_version() == before  # nothing committed
    assert "_txnlog" not in str(err.value)  # no internal plan column named
    assert "ERROR" not in capfd.readouterr().err  # PySpark's query-context loggers stayed quiet
    assert not PySparkLogger.getLogger("SQLQueryContextLogger").disabled  # ... and are back on
    return _first_line(err.value)


def test_a_misspelled_column_in_a_delete_predicate(table: SparkTable, capfd: Any) -> None:
    first = _refused(table, lambda: table.delete("amout > 3"), PredicateError, capfd)
    assert first == f"unknown column `amout` in the DELETE predicate; {COLUMNS}"


def test_a_misspelled_column_in_an_update_predicate_or_value(table: SparkTable, capfd: Any) -> None:
    first = _refused(table, lambda: table.update("amout > 3", {"amount": "0"}), PredicateError, capfd)
    assert first == f"unknown column `amout` in the UPDATE predicate; {COLUMNS}"
    first = _refused(table, lambda: table.update(None, {"amount": "amout * 2"}), InvalidArgumentError, capfd)
    assert first == f"unknown column `amout` in the UPDATE set value for 'amount'; {COLUMNS}"


def test_a_misspelled_column_in_a_merge_on_clause_or_condition(table: SparkTable, capfd: Any) -> None:
    source = table.spark.createDataFrame([(1, 9.0, "a")], "id long, amount double, day string")
    both = "target (t) columns: id, amount, day; source (s) columns: id, amount, day"
    merge = table.merge(source, "t.idd = s.id").when_matched_update_all()
    first = _refused(table, merge.execute, PredicateError, capfd)
    assert first == f"unknown column `t`.`idd` in the MERGE ON clause; {both}"
    merge = table.merge(source, "t.id = s.id").when_matched_delete(condition="s.opp = 'D'")
    first = _refused(table, merge.execute, PredicateError, capfd)
    assert first == f"unknown column `s`.`opp` in the WHEN MATCHED delete condition; {both}"
    merge = table.merge(source, "t.id = s.id").when_not_matched_insert(values={"id": "s.idd"})
    first = _refused(table, merge.execute, InvalidArgumentError, capfd)
    assert first.startswith("unknown column `s`.`idd` in the WHEN NOT MATCHED insert value for 'id'; source")


def test_a_predicate_that_is_not_a_condition(table: SparkTable, capfd: Any) -> None:
    first = _refused(table, lambda: table.delete("amount >>> 3"), PredicateError, capfd)
    assert first.startswith("the DELETE predicate must be a condition (true / false): ")
    assert "coalesce" not in first  # the planner's wrapping is not the user's SQL


def test_a_predicate_that_does_not_parse(table: SparkTable, capfd: Any) -> None:
    first = _refused(table, lambda: table.delete("amount >"), PredicateError, capfd)
    assert first.startswith("the DELETE predicate is not valid Spark SQL: [PARSE_SYNTAX_ERROR]")


def test_a_misspelled_column_in_replace_where_or_optimize_where(table: SparkTable, capfd: Any) -> None:
    df = table.spark.createDataFrame([(3, 1.0, "a")], "id long, amount double, day string")
    call = lambda: table.write(df, mode="overwrite", replace_where="dya = 'a'")  # noqa: E731
    first = _refused(table, call, PredicateError, capfd)
    assert first == f"unknown column `dya` in the replace_where predicate; {COLUMNS}"
    first = _refused(table, lambda: table.optimize(where="dya = 'a'"), PredicateError, capfd)
    assert first == f"unknown column `dya` in the OPTIMIZE where predicate; {COLUMNS}"


@pytest.mark.parametrize(
    ("options", "first"),
    [
        ({"bogus": "1"}, "txnlog: unknown read options ['bogus']; read options: maxPartitionBytes, path,"),
        ({"versionAsOf": "abc"}, "txnlog: versionAsOf must be an integer >= 0, got 'abc'"),
        ({"versionAsOf": "0", "timestampAsOf": "2024-01-01"}, "txnlog: give versionAsOf or timestampAsOf"),
    ],
)
def test_bad_read_options_of_the_data_source(
    table: SparkTable, options: dict[str, str], first: str, capfd: Any
) -> None:
    spark = table.spark
    register(spark)
    reader = spark.read.format("txnlog").options(**options)
    with pytest.raises(AnalysisException) as raw:  # Spark's own API: Spark's class...
        reader.load(table.uri)
    carried = carried_error(raw.value)
    assert isinstance(carried, InvalidArgumentError) and _first_line(carried).startswith(first)
    with pytest.raises(InvalidArgumentError) as err, txnlog_errors():  # ...ours, through txnlog_errors
        reader.load(table.uri)
    assert _first_line(err.value).startswith(first) and isinstance(err.value.__cause__, AnalysisException)
    assert "ERROR" not in capfd.readouterr().err


def test_no_path_and_replace_where_on_a_data_column(table: SparkTable) -> None:
    spark = table.spark
    register(spark)
    with pytest.raises(InvalidArgumentError) as err, txnlog_errors():
        spark.read.format("txnlog").load()
    assert _first_line(err.value) == "txnlog: no table path; use .load(path)"
    df = spark.createDataFrame([(3, 1.0, "a")], "id long, amount double, day string")
    writer = df.write.format("txnlog").mode("overwrite").option("replaceWhere", "amount > 1")
    with pytest.raises(InvalidArgumentError) as err, txnlog_errors():
        writer.save(table.uri)
    assert _first_line(err.value).startswith(
        "txnlog: replaceWhere 'amount > 1' names data columns ['amount']"
    )
    assert table.table.latest_version() == 1


def test_muting_leaves_pyspark_loggers_pyspark_loggers() -> None:
    """Regression: muting the query-context loggers before PySpark had made them created plain
    Loggers, and every later analysis error died in PySpark's logging with a TypeError."""
    code = (
        "import logging\n"
        "from pyspark.logger import PySparkLogger\n"
        "from airflow_txnlog.spark.errors import quiet_analysis\n"
        "with quiet_analysis():\n"
        "    pass\n"
        "for name in ('SQLQueryContextLogger', 'DataFrameQueryContextLogger'):\n"
        "    assert isinstance(logging.getLogger(name), PySparkLogger), name\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
