"""to_df(version=...) and to_df(timestamp=...) match the engine's snapshots."""

from __future__ import annotations

import time

import pytest

from airflow_txnlog.engine import InvalidArgumentError, NotPublishedError, Table
from airflow_txnlog.spark import SparkTable
from tests.spark.conftest import make_rows
from tests.spark.helpers import engine_rows, spark_rows

pytestmark = [pytest.mark.spark]


@pytest.mark.slow
def test_time_travel_by_version_and_timestamp(spark, copy_table) -> None:
    path = copy_table(True, "t")
    st = SparkTable(spark, str(path))
    st.delete("part = 'a'")
    time.sleep(0.05)
    st.write(spark.createDataFrame(make_rows(range(5000, 5010))))
    st.update("id < 100", {"value": "0"})
    table = Table.open(str(path))
    for v in range(table.latest_version() + 1):
        assert spark_rows(st.to_df(version=v)) == engine_rows(path, v), v
    for entry in table.history():
        at = entry["timestamp"]
        expected = table.snapshot(timestamp=at).version
        assert expected == entry["version"]
        assert spark_rows(st.to_df(timestamp=at)) == engine_rows(path, expected)
    assert st.to_df(version=0).count() == 0


def test_published_reads_the_channel_not_the_latest(spark, copy_table) -> None:
    path = copy_table(False, "p")
    st = SparkTable(spark, str(path))
    with pytest.raises(NotPublishedError, match="nothing is published"):
        st.to_df(published=True)
    audited = Table.open(str(path)).publish()
    st.delete("id < 100")  # a newer, unaudited version
    assert spark_rows(st.to_df(published=True)) == engine_rows(path, audited.version)
    assert spark_rows(st.to_df()) != spark_rows(st.to_df(published=True))
    Table.open(str(path)).publish(channel="nightly")
    assert spark_rows(st.to_df(published="nightly")) == spark_rows(st.to_df())
    for bad in ({"published": True, "version": 1}, {"published": ""}, {"published": 3}):
        with pytest.raises(InvalidArgumentError):
            st.to_df(**bad)
