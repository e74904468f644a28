"""Restore errors name the way out (issue 30): a version whose commits log cleanup removed points to
the savepoint that still holds it (or says none does and lists the table's savepoints), and a
missing savepoint lists the ones that exist."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

from airflow_txnlog.engine import SavepointNotFoundError, Table, VersionNotFoundError

SCHEMA = pa.schema([("id", pa.int64())])


def _cleaned(uri: str) -> Table:
    """Versions 0..3, a savepoint of version 1, a checkpoint of 3, and the log below 3 cleaned up."""
    t = Table.create(uri, schema=SCHEMA)
    for i in range(3):
        t.write(pa.table({"id": [i]}, schema=SCHEMA))
    t.create_savepoint("before-merge", version=1)
    t.checkpoint()
    t.cleanup_log(retention_hours=0, dry_run=False)
    assert not t.storage.exists(f"_delta_log/{1:020d}.json")
    return t


def test_a_cleaned_up_version_held_by_a_savepoint_names_it(tmp_path: Path) -> None:
    t = _cleaned(str(tmp_path))
    with pytest.raises(VersionNotFoundError) as err:
        t.restore(version=1)
    first = str(err.value).splitlines()[0]
    assert "version 1 cannot be reconstructed" in first
    assert "Help: savepoint 'before-merge' holds version 1: restore(savepoint='before-merge')" in first
    assert t.restore(savepoint="before-merge").committed  # the way out works
    assert t.snapshot().to_arrow().column("id").to_pylist() == [0]


def test_a_cleaned_up_version_no_savepoint_holds_says_so(tmp_path: Path) -> None:
    t = _cleaned(str(tmp_path))
    with pytest.raises(VersionNotFoundError) as err:
        t.restore(version=0)
    first = str(err.value).splitlines()[0]
    assert "No savepoint holds version 0 (savepoints of this table: 'before-merge' (version 1))" in first


def test_a_version_past_the_latest_gets_no_savepoint_hint(tmp_path: Path) -> None:
    t = _cleaned(str(tmp_path))
    with pytest.raises(VersionNotFoundError, match="does not exist; the latest version is 3") as err:
        t.restore(version=9)
    assert "savepoint" not in str(err.value)


def test_a_missing_savepoint_lists_the_existing_ones(tmp_path: Path) -> None:
    t = _cleaned(str(tmp_path))
    with pytest.raises(SavepointNotFoundError) as err:
        t.restore(savepoint="nosuch")
    assert str(err.value) == (
        "no savepoint named 'nosuch'; savepoints of this table: 'before-merge' (version 1)"
    )
    t.delete_savepoint("before-merge")
    with pytest.raises(
        SavepointNotFoundError, match=r"^no savepoint named 'nosuch'; this table has no savepoints$"
    ):
        t.get_savepoint("nosuch")


def test_an_unreadable_savepoint_record_does_not_hide_the_version_error(tmp_path: Path) -> None:
    t = _cleaned(str(tmp_path))
    t.storage.write("_savepoints/broken.json", b"{not json")
    with pytest.raises(VersionNotFoundError) as err:
        t.restore(version=0)
    assert "No savepoint holds version 0 (the table's savepoints could not be listed)" in str(err.value)
