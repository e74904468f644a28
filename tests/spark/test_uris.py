"""fsspec -> Hadoop URI mapping (uris.py)."""

from __future__ import annotations

import pytest

from airflow_txnlog.engine import InvalidArgumentError
from airflow_txnlog.spark import DEFAULT_SCHEME_MAP, to_hadoop_uri
from airflow_txnlog.spark.uris import decode_spark_path, file_uri

pytestmark = [pytest.mark.spark]


@pytest.mark.parametrize(
    ("uri", "expected"),
    [
        ("/data/sales", "file:/data/sales"),
        ("/data/sales/", "file:/data/sales"),
        ("file:///data/sales", "file:/data/sales"),
        ("s3://bucket/t", "s3a://bucket/t"),
        ("s3a://bucket/t/", "s3a://bucket/t"),
        ("gs://bucket/a/b", "gs://bucket/a/b"),
        ("abfss://c@acct.dfs.core.windows.net/t", "abfss://c@acct.dfs.core.windows.net/t"),
    ],
)
def test_default_mapping(uri: str, expected: str) -> None:
    assert to_hadoop_uri(uri) == expected


def test_relative_local_path_becomes_absolute(tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert to_hadoop_uri("t") == f"file:{tmp_path}/t"


def test_mapping_is_configurable() -> None:
    assert DEFAULT_SCHEME_MAP["s3"] == "s3a"
    assert to_hadoop_uri("s3://b/t", {"s3": "s3"}) == "s3://b/t"
    assert to_hadoop_uri("az://c/t", {"az": "wasbs"}) == "wasbs://c/t"


@pytest.mark.parametrize("uri", ["memory://tables/x", "az://container/t", "ftp://host/t"])
def test_unreachable_schemes_are_refused(uri: str) -> None:
    with pytest.raises(InvalidArgumentError, match="scheme_map"):
        to_hadoop_uri(uri)


def test_file_uris_and_spark_reported_paths_round_trip() -> None:
    root = "file:/data/t"
    uri = file_uri(root, "p=a%25b c+d/part-0.parquet")
    assert uri == "file:/data/t/p=a%25b c+d/part-0.parquet"
    # Spark reports the URI form: '%' -> %25, space -> %20, '+' kept.
    assert decode_spark_path("file:/data/t/p=a%2525b%20c+d/part-0.parquet") == uri
    assert decode_spark_path("file:///data/t/x.parquet") == "file:/data/t/x.parquet"
    assert file_uri(root, "s3://other/x.parquet") == "s3a://other/x.parquet"
