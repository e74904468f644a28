"""Reading tables at their versions in a multi-table release (engine.releases) through Spark:
`SparkTable.to_df(release=...)` and the `txnlog` data source's `release` / `releaseSequence` options.

Expected rows are the engine's own read of the version the release names; what is tested is that
each table is read at *its* version in the release (not the latest), whichever release is current,
and that contradictory or malformed options are refused by name before any job."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from airflow_txnlog.engine import (
    InvalidArgumentError,
    Release,
    ReleaseError,
    ReleaseNotFoundError,
    Releases,
    Table,
)
from airflow_txnlog.spark import SparkTable, register, txnlog_errors
from airflow_txnlog.spark.source.options import ReadOptions
from airflow_txnlog.spark.source.reader import TxnlogReader
from airflow_txnlog.spark.source.stream import StreamOptions
from tests.spark.conftest import make_rows
from tests.spark.helpers import engine_rows, spark_rows

pytestmark = [pytest.mark.spark]


def _read(spark: Any, path: Path, **options: object) -> Any:
    register(spark)
    reader = spark.read.format("txnlog")
    for k, v in options.items():
        reader = reader.option(k, str(v))
    return reader.load(str(path))


def _two_releases(spark: Any, copy_table: Any, log: Path) -> tuple[Path, Path, Release, Release]:
    """Tables a (partitioned) and b; release 0: a v1, b v1; then a v2 (a delete) and b v2 (an
    append), and release 1: a v2 only (b stays at v1 in it, its v2 is not released)."""
    a, b = copy_table(True, "a"), copy_table(False, "b")
    ua, ub = Table.open(str(a)).uri, Table.open(str(b)).uri
    releases = Releases.create(str(log))
    first = releases.publish({ua: 1, ub: 1})
    SparkTable(spark, str(a)).delete("part = 'a'")
    SparkTable(spark, str(b)).write(spark.createDataFrame(make_rows(range(5000, 5010))))
    second = releases.publish({ua: 2})
    assert second.versions == {ua: 2, ub: 1}
    return a, b, first, second


def test_to_df_reads_each_table_at_its_version_in_the_release(spark, copy_table, tmp_path: Path) -> None:
    a, b, first, second = _two_releases(spark, copy_table, tmp_path / "log")
    sa, sb = SparkTable(spark, str(a)), SparkTable(spark, str(b))
    assert spark_rows(sa.to_df(release=first)) == engine_rows(a, 1)
    assert spark_rows(sa.to_df(release=second)) == engine_rows(a, 2)
    assert spark_rows(sb.to_df(release=second)) == engine_rows(b, 1)  # not its latest version (2)
    assert spark_rows(sb.to_df()) == engine_rows(b, 2)
    assert sb.to_df(release=second).schema == sb.to_df().schema


def test_data_source_reads_the_current_release_or_a_given_one(spark, copy_table, tmp_path: Path) -> None:
    log = tmp_path / "log"
    a, b, _, _ = _two_releases(spark, copy_table, log)
    assert spark_rows(_read(spark, a, release=log)) == engine_rows(a, 2)
    assert spark_rows(_read(spark, b, release=log)) == engine_rows(b, 1)
    assert spark_rows(_read(spark, a, release=log, releaseSequence=0)) == engine_rows(a, 1)
    assert spark_rows(_read(spark, b, RELEASE=f"file://{log}")) == engine_rows(b, 1)  # names: any case
    filtered = _read(spark, a, release=log, releaseSequence=0).filter("part = 'a'")
    assert spark_rows(filtered) == [r for r in engine_rows(a, 1) if r["part"] == "a"]


def test_reader_is_pinned_to_the_released_version(copy_table, tmp_path: Path) -> None:
    """Planning and every task read the version the release named when the reader was made, whatever
    is published next (the pinned options name the version, no longer the log)."""
    a = copy_table(False, "a")
    releases = Releases.create(str(tmp_path / "log"))
    releases.publish({Table.open(str(a)).uri: 1})
    options = ReadOptions.parse({"path": str(a), "release": str(tmp_path / "log")})
    table, snap = options.snapshot()
    pinned = options.pinned(snap)
    assert (pinned.version, pinned.release, pinned.release_sequence) == (1, None, None)
    table.write(make_rows(range(9000, 9001)))
    releases.publish({table.uri: 2})
    files = [f for p in TxnlogReader(pinned).partitions() for f in p.files]  # type: ignore[attr-defined]
    assert {f.path for f in files} == {f.path for f in table.snapshot(1).files()}


def test_to_df_refuses_a_release_with_another_version(spark, copy_table, tmp_path: Path) -> None:
    a = copy_table(False, "a")
    st = SparkTable(spark, str(a))
    release = Releases.create(str(tmp_path / "log")).publish({st.uri: 1})
    for other in ({"version": 1}, {"timestamp": 0}, {"published": True}):
        with pytest.raises(
            InvalidArgumentError, match="give one of version, timestamp, published or release"
        ):
            st.to_df(release=release, **other)
    with pytest.raises(InvalidArgumentError, match="not a release log's URI"):
        st.to_df(release=str(tmp_path / "log"))  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError, match="release must be a Release"):
        st.to_df(release=1)  # type: ignore[arg-type]
    other = SparkTable(spark, str(copy_table(False, "other")))
    with pytest.raises(ReleaseError, match="is not in release 0"):
        other.to_df(release=release)


@pytest.mark.parametrize(
    ("options", "match"),
    [
        ({"release": "{log}", "versionAsOf": "1"}, "give release or versionAsOf / timestampAsOf, not both"),
        ({"release": "{log}", "timestampAsOf": "2024-01-01"}, "not both"),
        ({"releaseSequence": "0"}, "releaseSequence needs release"),
        ({"release": "{log}", "releaseSequence": "-1"}, "releaseSequence must be an integer >= 0"),
        ({"release": "{log}", "releaseSequence": "x"}, "releaseSequence must be an integer"),
        ({"release": " "}, "release must be a release log's URI"),
    ],
)
def test_bad_release_options_are_refused_by_name(options: dict[str, str], match: str, tmp_path: Path) -> None:
    given = {k: v.format(log=tmp_path / "log") for k, v in options.items()}
    with pytest.raises(InvalidArgumentError, match=match):
        ReadOptions.parse({"path": str(tmp_path / "t"), **given})


def test_release_errors_come_back_through_spark(spark, copy_table, tmp_path: Path) -> None:
    a = copy_table(False, "a")
    log = tmp_path / "log"
    with pytest.raises(ReleaseNotFoundError, match="no release log"), txnlog_errors():
        _read(spark, a, release=log).count()
    releases = Releases.create(str(log))
    with pytest.raises(ReleaseNotFoundError, match="nothing is released yet"), txnlog_errors():
        _read(spark, a, release=log).count()
    releases.publish({Table.open(str(copy_table(False, "b"))).uri: 1})
    with pytest.raises(ReleaseError, match="is not in release 0"), txnlog_errors():
        _read(spark, a, release=log).count()
    with pytest.raises(ReleaseNotFoundError, match="release 3 does not exist"), txnlog_errors():
        _read(spark, a, release=log, releaseSequence=3).count()
    with pytest.raises(InvalidArgumentError, match="not both"), txnlog_errors():
        _read(spark, a, release=log, versionAsOf=1).count()
    with pytest.raises(InvalidArgumentError, match="unknown streaming read options"):
        StreamOptions.parse({"path": str(a), "release": str(log)})  # (a stream follows every commit)
