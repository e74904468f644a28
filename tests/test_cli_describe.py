"""`txnlog describe` shows a table's rules and layout features (issue 38, part 4): per column the
generation expression, identity settings and high-water mark, invariants; per table the CHECK
constraints by name, clustering keys, row tracking and metadata domains; in text within 80 columns
and in `--json` whole, on tables the engine wrote and on tables Delta on Spark / Databricks wrote."""

from __future__ import annotations

import datetime as dt
import json
import shutil
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from airflow_txnlog.engine import IdentityColumn, Table
from tests.cli_support import SCHEMA, event_rows, run, run_json
from tests.compat.conftest import GOLDEN_ROOT

NARROW = {"COLUMNS": "80"}  # what a pipe gets; set explicitly so the runner's own terminal cannot widen it
LABEL = (  # a generated column whose expression needs three lines at 80 columns
    "CASE WHEN amount > 1000 THEN 'a rather large amount indeed' WHEN amount > 100 THEN "
    "'medium-sized amount' WHEN amount > 10 THEN 'small amount' ELSE 'tiny amount' END"
)
LONG_NAME = "amount_is_positive_or_unknown_and_id_in_a_sensible_range"
LONG_CHECK = " AND ".join(
    f"(amount > {i} OR amount IS NULL OR id BETWEEN {i} AND {i * 1000})" for i in range(5)
)
HUGE_CHECK = " OR ".join(["label = 'tiny amount'", *(f"label = 'label {i:03d}'" for i in range(30))])  # 600+
OWNERSHIP = json.dumps({"owner": "team-a", "tier": 2})


def _invariant(name: str, dtype: pa.DataType, expression: str) -> pa.Field:
    return pa.field(
        name, dtype, metadata={"delta.invariants": json.dumps({"expression": {"expression": expression}})}
    )


def _rules_table(path: Path) -> Table:
    """Every rule and feature describe reports, on one engine-written table. Versions: 0 create,
    1 three rows (ids 100, 110, 120), 2-5 constraints, 6 a domain, 7 one row (id 130)."""
    schema = pa.schema(
        [
            ("id", pa.int64()),
            ("ts", pa.timestamp("us", tz="UTC")),
            _invariant("amount", pa.float64(), "amount < 100000"),
            ("day", pa.date32()),
            ("label", pa.string()),
            pa.field("s", pa.struct([_invariant("a", pa.int64(), "s.a >= 0"), ("b", pa.string())])),
        ]
    )
    t = Table.create(
        str(path),
        schema=schema,
        identity_columns={"id": IdentityColumn(start=100, step=10, always=True)},
        generated_columns={"day": "CAST(ts AS DATE)", "label": LABEL},
        cluster_by=["amount"],
        properties={"delta.enableRowTracking": "true"},
    )
    t.write(_rows([1.0, 2.0, 3.0]))
    t.add_constraint("positive", "amount > 0")
    t.add_constraint(LONG_NAME, LONG_CHECK)
    t.add_constraint("known_label", HUGE_CHECK)
    t.add_constraint("multi_line", "amount < 1e9\n    AND id > 0")
    with t.transaction("SET DOMAIN METADATA") as txn:
        txn.set_domain_metadata("com.example.ownership", OWNERSHIP)
        txn.commit()
    assert t.write(_rows([4.0])) == 7
    return t


def _rows(amounts: list[float]) -> pa.Table:
    ts = [dt.datetime(2024, 1, 1, tzinfo=dt.UTC)] * len(amounts)
    s = pa.array([{"a": 1, "b": "x"}] * len(amounts), pa.struct([("a", pa.int64()), ("b", pa.string())]))
    return pa.table({"ts": ts, "amount": amounts, "label": ["tiny amount"] * len(amounts), "s": s})


@pytest.fixture
def rules_table(tmp_path: Path) -> Table:
    return _rules_table(tmp_path / "rules")


def _golden(tmp_path: Path, name: str) -> str:
    copy = tmp_path / name
    shutil.copytree(GOLDEN_ROOT / "delta-spark-features" / name, copy)
    return str(copy)


def _text(*args: str, env: dict[str, str] | None = None) -> str:
    result = run("describe", *args, env=env or NARROW)
    assert result.exit_code == 0, result.output
    return result.stdout


def _flat(text: str) -> str:
    """The text with every run of whitespace one space (wrapped lines read as one)."""
    return " ".join(text.split())


def _section(text: str, title: str) -> str:
    """The lines of a plain section of describe's text, up to the next unindented line."""
    lines = text.splitlines()
    start = lines.index(title) + 1
    end = next((i for i in range(start, len(lines)) if lines[i] and not lines[i].startswith(" ")), len(lines))
    return "\n".join(lines[start:end])


# ----------------------------------------------------------------------------------------------- JSON
def test_json_shows_each_columns_generation_identity_and_invariants(rules_table: Table) -> None:
    by_name = {c["name"]: c for c in run_json("describe", rules_table.uri)["schema"]}
    assert by_name["id"] == {
        "name": "id",
        "type": "long",
        "nullable": True,
        "identity": {
            "start": 100,
            "step": 10,
            "highWaterMark": 130,
            "generated": "ALWAYS",
            "allowExplicitInsert": False,
        },
    }
    assert by_name["day"]["generated"] == {"expression": "CAST(ts AS DATE)", "enforced": True}
    assert by_name["label"]["generated"] == {"expression": LABEL, "enforced": True}
    assert by_name["amount"]["invariants"] == [{"column": "amount", "expression": "amount < 100000"}]
    assert by_name["s"]["invariants"] == [{"column": "s.a", "expression": "s.a >= 0"}]
    assert by_name["ts"] == {"name": "ts", "type": "timestamp", "nullable": True}  # no rule: no key


def test_json_shows_constraints_clustering_row_tracking_and_domains(rules_table: Table) -> None:
    doc = run_json("describe", rules_table.uri)
    assert doc["constraints"] == [  # by name, each expression whole
        {"name": "amount_is_positive_or_unknown_and_id_in_a_sensible_range", "expression": LONG_CHECK},
        {"name": "known_label", "expression": HUGE_CHECK},
        {"name": "multi_line", "expression": "amount < 1e9\n    AND id > 0"},
        {"name": "positive", "expression": "amount > 0"},
    ]
    assert doc["clustering"] == {"columns": ["amount"]}
    # rows 0-2 at version 1, row 3 at version 7: the mark is the highest id assigned
    assert doc["rowTracking"] == {"supported": True, "enabled": True, "suspended": False, "highWaterMark": 3}
    assert doc["domains"] == {
        "com.example.ownership": OWNERSHIP,
        "delta.clustering": '{"clusteringColumns":[["amount"]]}',
        "delta.rowTracking": '{"rowIdHighWaterMark":3}',
    }
    assert doc["warnings"] == []


def test_json_keeps_the_fields_it_had(rules_table: Table) -> None:
    doc = run_json("describe", rules_table.uri)
    kept = {"version", "id", "name", "description", "location", "protocol", "partitionColumns", "properties"}
    kept |= {"schema", "numFiles", "sizeBytes", "checkpointVersion", "createdTime", "timestamp"}
    assert kept <= set(doc)
    assert doc["properties"]["delta.constraints.positive"] == "amount > 0"  # still the raw properties too
    assert [(c["name"], c["type"], c["nullable"]) for c in doc["schema"]][:2] == [
        ("id", "long", True),
        ("ts", "timestamp", True),
    ]


def test_json_at_a_version_shows_that_versions_rules(rules_table: Table) -> None:
    doc = run_json("describe", rules_table.uri, "--version", "1")
    assert doc["schema"][0]["identity"]["highWaterMark"] == 120
    assert doc["constraints"] == []
    assert doc["rowTracking"]["highWaterMark"] == 2
    assert "com.example.ownership" not in doc["domains"]


def test_a_table_without_rules_says_so_in_json_and_adds_no_text_sections(tmp_path: Path) -> None:
    uri = str(tmp_path / "plain")
    Table.create(uri, schema=SCHEMA).write(event_rows([1], "2024-01-01"))
    doc = run_json("describe", uri)
    assert (doc["constraints"], doc["clustering"], doc["domains"], doc["warnings"]) == ([], None, {}, [])
    assert doc["rowTracking"] == {
        "supported": False,
        "enabled": False,
        "suspended": False,
        "highWaterMark": None,
    }
    text = _text(uri)
    for title in ("Column rules", "CHECK constraints", "Domains", "Could not read"):
        assert title not in text.splitlines()
    assert "clustering keys │ -" in _flat(text) and "row tracking │ off" in _flat(text)


# ----------------------------------------------------------------------------------------------- text
def test_text_shows_the_rules_of_each_column(rules_table: Table) -> None:
    rules = _section(_text(rules_table.uri), "Column rules")
    assert rules.splitlines()[:3] == [
        "  id",
        "    identity   GENERATED ALWAYS AS IDENTITY (START WITH 100 INCREMENT BY 10);",
        "               high-water mark 130",
    ]
    flat = _flat(rules)
    assert "day generated CAST(ts AS DATE)" in flat
    assert f"label generated {LABEL}" in flat  # wrapped over lines, never cut (under 400 characters)
    assert "amount invariant amount < 100000" in flat
    assert "s invariant on s.a: s.a >= 0" in flat


def test_text_shows_constraints_by_name_clustering_row_tracking_and_domains(rules_table: Table) -> None:
    text = _text(rules_table.uri)
    checks = _section(text, "CHECK constraints")
    assert "  positive" + " " * 18 + "amount > 0" in checks.splitlines()  # expressions at column 28
    assert f"  {LONG_NAME}" in checks.splitlines()  # a longer name on a line of its own ...
    assert f"{LONG_NAME} {LONG_CHECK}" in _flat(checks)  # ... its expression below it, whole
    assert "multi_line amount < 1e9 AND id > 0" in _flat(checks)  # one line: the line break is a space
    cut = (
        f"{_flat(HUGE_CHECK)[:400].rstrip()} ... (cut at 400 of {len(HUGE_CHECK)} characters; --json has all)"
    )
    assert f"known_label {cut}" in _flat(checks)
    assert "clustering keys │ amount │" in _flat(text)
    assert "row tracking │ on; high-water mark 3 │" in _flat(text)
    domains = _section(text, "Domains").splitlines()
    assert domains == [
        f"  com.example.ownership  {OWNERSHIP}",
        "  delta.clustering       (Delta feature; see --json)",
        "  delta.rowTracking      (Delta feature; see --json)",
    ]
    assert "delta.constraints." not in text  # shown as constraints, not again under Properties
    assert "delta.enableRowTracking" in text


def test_no_line_is_wider_than_the_console(tmp_path: Path) -> None:
    """The rule: every line fits the console's width, 80 on a pipe; long expressions, names, words
    and locations wrap (a single word longer than the line is cut into pieces)."""
    t = _rules_table(tmp_path / ("a_long_folder_name_" * 5))
    t.add_constraint("one_long_word", f"label <> '{'x' * 150}'")
    for env, width in ((NARROW, 80), ({"COLUMNS": "100"}, 100)):
        text = _text(t.uri, env=env)
        too_wide = [line for line in text.splitlines() if len(line) > width]
        assert too_wide == [], too_wide
    # the 150-character literal is cut into pieces on lines of their own, all of it shown
    assert f"one_long_wordlabel<>'{'x' * 150}'" in _section(text, "CHECK constraints").replace(
        " ", ""
    ).replace("\n", "")


def test_cluster_by_none_is_shown_as_no_keys(tmp_path: Path) -> None:
    t = Table.create(str(tmp_path / "c"), schema=SCHEMA, cluster_by=["id"])
    t.cluster_by(None)
    assert run_json("describe", t.uri)["clustering"] == {"columns": []}
    assert "clustering keys │ none (CLUSTER BY NONE) │" in _flat(_text(t.uri))


# ------------------------------------------------------------------------------- tables other engines wrote
def test_an_identity_column_spark_wrote(tmp_path: Path) -> None:
    """Delta's IdentityColumnSuite table: `id` BY DEFAULT (allowExplicitInsert), start 1, step 1, mark 4."""
    uri = _golden(tmp_path, "identity_test_written_by_version_5")
    doc = run_json("describe", uri)
    assert doc["schema"][0]["identity"] == {
        "start": 1,
        "step": 1,
        "highWaterMark": 4,
        "generated": "BY DEFAULT",
        "allowExplicitInsert": True,
    }
    assert [c["name"] for c in doc["schema"] if len(c) > 3] == ["id"]
    assert _section(_text(uri), "Column rules").splitlines() == [
        "  id",
        "    identity   GENERATED BY DEFAULT AS IDENTITY (START WITH 1 INCREMENT BY 1);",
        "               high-water mark 4",
    ]


@pytest.mark.parametrize(
    ("name", "enforced", "line"),
    [
        ("dbr_8_1_generated_columns", True, "    generated  c1 + 1"),
        (
            "dbr_8_0_non_generated_columns",
            False,
            "    generated  c1 + 1 (not enforced: the protocol lacks generatedColumns)",
        ),
    ],
)
def test_a_generated_column_databricks_wrote(tmp_path: Path, name: str, enforced: bool, line: str) -> None:
    """GeneratedColumnSuite's tables: `c2 = c1 + 1` at writer 4 (enforced) and at writer 2 (metadata only)."""
    uri = _golden(tmp_path, name)
    c2 = run_json("describe", uri)["schema"][1]
    assert c2["generated"] == {"expression": "c1 + 1", "enforced": enforced}
    assert _section(_text(uri), "Column rules").splitlines() == ["  c2", line]


def test_unreadable_metadata_is_a_warning_not_a_failure(tmp_path: Path) -> None:
    uri = _golden(tmp_path, "identity_test_written_by_version_5")
    commit = Path(uri) / "_delta_log" / f"{0:020d}.json"
    commit.chmod(0o644)
    text = commit.read_text()
    commit.write_text(text.replace('highWaterMark\\":4', 'highWaterMark\\":\\"four\\"'))
    doc: dict[str, Any] = run_json("describe", uri)
    assert len(doc["warnings"]) == 1
    assert doc["warnings"][0].startswith("identity columns: identity column 'id' has unreadable metadata")
    assert "identity" not in doc["schema"][0] and doc["numFiles"] == 2
    out = _text(uri)
    assert "Could not read" in out.splitlines()
    assert "'delta.identity.highWaterMark': 'four'" in _flat(out)
