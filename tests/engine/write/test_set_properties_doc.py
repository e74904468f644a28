"""docs/engine.md's paragraph on `set_properties` says what the code does (issue 38, item 5): every
property that turns a feature on (engine.properties.FEATURE_PROPERTIES) is listed there, and each
property it lists does turn its feature on for a table with rows, row tracking included (the
paragraph once said row tracking was refused, while the row tracking section showed it enabled)."""

from __future__ import annotations

import re
from pathlib import Path

import pyarrow as pa
import pytest

from airflow_txnlog.engine import Table
from airflow_txnlog.engine.features.table_features import implied_features
from airflow_txnlog.engine.properties import FEATURE_PROPERTIES

DOC = Path(__file__).resolve().parents[3] / "docs" / "engine.md"
SCHEMA = pa.schema([("id", pa.int64())])


def _paragraph() -> str:
    text = DOC.read_text()
    start = text.index("`set_properties` merges the properties")
    return " ".join(text[start : text.index("\n\n", start)].split())


def _listed() -> list[tuple[str, str]]:
    """(key, value) of each property the paragraph says turns a feature on (value `true` unless the
    paragraph gives one; the protocol version keys and `delta.feature.<name>` left out)."""
    turned_on = _paragraph().split("table features they turn on (", 1)[1].split(", as Delta's ALTER", 1)[0]
    found = re.findall(r"`(delta\.[A-Za-z.]+)(?:=([A-Za-z0-9]+))?`", turned_on)
    return [(key, value or "true") for key, value in found if not key.startswith("delta.min")]


def test_every_property_that_turns_a_feature_on_is_listed() -> None:
    listed = {key for key, _ in _listed()}
    # (icebergCompatV2 is turned on at create: on a table with files it is refused, as the paragraph says)
    assert set(FEATURE_PROPERTIES) - {"delta.enableIcebergCompatV2"} <= listed
    assert "delta.enableIcebergCompatV2=true` is refused on a table with data files" in _paragraph()
    assert "row tracking" not in _paragraph().split("cannot honor", 1)[1].split(";", 1)[0]


@pytest.mark.parametrize(("key", "value"), _listed())
def test_each_listed_property_turns_its_feature_on(tmp_path: Path, key: str, value: str) -> None:
    t = Table.create(str(tmp_path / "t"), schema=SCHEMA)
    t.write(pa.table({"id": [1, 2]}, schema=SCHEMA))
    feature = FEATURE_PROPERTIES[key][0] if key in FEATURE_PROPERTIES else "columnMapping"
    assert t.set_properties({key: value}) == 2
    snap = t.snapshot()
    assert feature in implied_features(snap.protocol)[1]  # the protocol names (or implies) the feature
    assert snap.metadata.configuration[key] == value
    if key == "delta.enableRowTracking":  # the live rows got their ids in that commit
        assert snap.to_arrow(row_tracking=True).column("_row_id").to_pylist() == [0, 1]
