"""`Table.overview` (engine.overview): one version of a table from one log listing and one read of the
savepoints; the facts reused when still current; a commit landing meanwhile never half-shown."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from airflow_txnlog.engine import InvalidArgumentError, Table, TableNotFoundError
from airflow_txnlog.engine import overview as overview_module
from airflow_txnlog.engine.storage import storage_for
from tests.airflow.version_helpers import CountingStorage
from tests.conftest import SCHEMA, rows


class KeyedCounting(CountingStorage):
    """`CountingStorage` (calls per method) that also records what each listing and read named."""

    def __init__(self, inner: Any) -> None:
        super().__init__(inner)
        self.keys: list[tuple[str, str]] = []

    def list_dir(self, key_dir: str, start_after: str | None = None) -> list[Any]:
        self.keys.append(("list", key_dir))
        return super().list_dir(key_dir, start_after)

    def read(self, key: str) -> bytes:
        self.keys.append(("read", key))
        return super().read(key)

    def read_many(self, keys: list[str]) -> list[bytes]:
        self.keys += [("read", k) for k in keys]
        return super().read_many(keys)


def _table(path: Path, commits: int = 14) -> Table:
    """Versions 0..commits-1 (a checkpoint at 10), savepoints `early` (version 3) and `late` (8)."""
    table = Table.create(str(path), schema=SCHEMA, properties={"delta.checkpointInterval": "10"})
    for i in range(1, commits):
        table.write(rows([i]))
        if i in (3, 8):
            table.create_savepoint("early" if i == 3 else "late")
    return table


def _counted(path: Path) -> tuple[Table, KeyedCounting]:
    storage = KeyedCounting(storage_for(str(path)))
    return Table(storage), storage


def test_one_listing_one_savepoint_read_and_one_version(tmp_path: Path) -> None:
    _table(tmp_path / "t")
    table, storage = _counted(tmp_path / "t")
    got = table.overview(limit=5)
    assert storage.keys.count(("list", "_delta_log")) == 1
    assert storage.keys.count(("list", "_savepoints")) == 1
    records = sorted(k for kind, k in storage.keys if kind == "read" and k.startswith("_savepoints/"))
    assert records == ["_savepoints/early.json", "_savepoints/late.json"]  # each once (health reads them too)
    assert got.version == 13 and [e["version"] for e in got.history.entries] == [13, 12, 11, 10, 9]
    assert [s.name for s in got.savepoints] == ["early", "late"] and got.savepoints_at(8) == ["late"]
    facts = got.facts
    assert facts is not None and facts.version == facts.health.version == 13
    assert facts.checkpoint_interval == 10 and facts.health.last_checkpoint_version == 10
    assert facts.partition_columns == () and facts.schema.names == SCHEMA.names
    assert facts.protocol is not None and facts.protocol["minReaderVersion"] >= 1
    assert facts.properties["delta.checkpointInterval"] == "10" and facts.layout["clustered"] is False
    assert facts.health.savepoints == ["early", "late"]


def test_known_facts_of_the_listed_version_load_no_snapshot(tmp_path: Path) -> None:
    first = _table(tmp_path / "t").overview(limit=1).facts
    table, storage = _counted(tmp_path / "t")
    again = table.overview(limit=1, known=first)
    assert again.facts is first
    assert not any("checkpoint" in key for _, key in storage.keys)  # no hint, no checkpoint: no snapshot
    Table.open(str(tmp_path / "t")).write(rows([99]))
    newer = table.overview(limit=1, known=first)
    assert newer.facts is not None and newer.facts is not first and newer.facts.version == 14


def test_a_history_page_without_facts(tmp_path: Path) -> None:
    _table(tmp_path / "t")
    table, storage = _counted(tmp_path / "t")
    page = table.overview(limit=4, before=5, with_facts=False)
    assert page.facts is None and [e["version"] for e in page.history.entries] == [4, 3, 2, 1]
    assert page.history.next_before == 1 and page.savepoints_at(3) == ["early"]
    commits = [k for kind, k in storage.keys if kind == "read" and k.endswith(".json") and "_delta_log" in k]
    assert len(commits) == 4  # the page's commits only


def test_a_commit_landing_meanwhile_is_not_half_shown(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    writer = _table(tmp_path / "t")
    real = overview_module.list_savepoints

    def commit_first(storage: Any) -> Any:
        writer.write(rows([7, 8]), mode="overwrite")  # version 14, after the listing
        return real(storage)

    monkeypatch.setattr(overview_module, "list_savepoints", commit_first)
    got = Table.open(str(tmp_path / "t"), lazy=True).overview(limit=2)
    assert got.version == 13 and got.facts is not None and got.facts.version == 13
    assert got.facts.health.num_files == 13  # version 13's files, not the overwrite's one
    assert writer.latest_version() == 14


def test_the_view_only_reads_and_the_arguments_are_checked(tmp_path: Path) -> None:
    _table(tmp_path / "t", commits=2)
    view = overview_module._OneRead(storage_for(str(tmp_path / "t")))
    with pytest.raises(InvalidArgumentError, match="only reads"):
        view.put_if_absent("_delta_log/00000000000000000002.json", b"{}")
    with pytest.raises(InvalidArgumentError, match="only reads"):
        view.delete("_delta_log/00000000000000000001.json")
    table = Table.open(str(tmp_path / "t"))
    with pytest.raises(InvalidArgumentError, match="VersionFacts"):
        table.overview(known={"version": 1})  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError, match="limit"):
        table.overview(limit=0)
    with pytest.raises(TableNotFoundError):
        Table.open(str(tmp_path / "missing"), lazy=True).overview()
    with pytest.raises(TableNotFoundError):
        Table.open(str(tmp_path / "missing"))
