"""`txnlog describe` as text: overview, schema, the table's rules, domains, properties, warnings.

Every line fits the console (80 columns on a pipe unless COLUMNS says otherwise). The rich tables
fold their cells; the other sections are plain lines whose text wraps at spaces under its label (a
word longer than the line is cut). There a multi-line expression is shown on one line (each line
break, with the indentation around it, becomes one space), and an expression longer than
EXPRESSION_CHARS characters, or a user domain's configuration longer than CONFIGURATION_CHARS, is
cut and says so. `--json` has everything whole. The `delta.constraints.*` properties are shown as
CHECK constraints, not again under Properties. For example:

    Column rules
      id
        identity   GENERATED ALWAYS AS IDENTITY (START WITH 100 INCREMENT BY 10);
                   high-water mark 120
      day
        generated  CAST(ts AS DATE)
    CHECK constraints
      positive_amount  amount > 0
    Domains
      com.example.ownership  {"owner": "team-a"}
      delta.clustering       (Delta feature; see --json)
"""

from __future__ import annotations

import re
import textwrap
from collections.abc import Mapping, Sequence
from typing import Any

from rich.table import Table as RichTable

from airflow_txnlog.cli._output import console
from airflow_txnlog.engine.spi import CONSTRAINT_PREFIX

EXPRESSION_CHARS = 400
CONFIGURATION_CHARS = 100
LABEL_WIDTH = 24  # a longer constraint or domain name gets a line of its own
_RULE_LABEL = len("invariant")
_MIN_WIDTH = 40
_LINE_BREAK = re.compile(r"\s*\n\s*")


def print_describe(doc: Mapping[str, Any]) -> None:
    """Print describe's JSON document `doc` (cli.read.describe_doc) for a reader."""
    out = console()
    out.print(_overview(doc))
    out.print(_schema(doc["schema"]))
    width = max(out.width, _MIN_WIDTH)
    sections = {
        "Column rules": _column_lines(doc["schema"], width),
        "CHECK constraints": _named_lines(
            {c["name"]: shortened(c["expression"], EXPRESSION_CHARS) for c in doc["constraints"]}, width
        ),
        "Domains": _named_lines({k: _domain_text(k, v) for k, v in doc["domains"].items()}, width),
    }
    for title, lines in sections.items():
        if lines:
            out.print("\n".join([title, *lines]), soft_wrap=True)
    properties = {k: v for k, v in doc["properties"].items() if not k.lower().startswith(CONSTRAINT_PREFIX)}
    if properties:
        out.print(_properties(properties))
    if doc["warnings"]:
        lines = [line for w in doc["warnings"] for line in _wrap(w, width, "  ", "    ")]
        out.print("\n".join(["Could not read", *lines]), soft_wrap=True)


# ---------------------------------------------------------------------------------------------- tables
def _overview(doc: Mapping[str, Any]) -> RichTable:
    proto = doc["protocol"]
    overview = RichTable(title=f"Table {doc['location']}", show_header=False, title_justify="left")
    overview.add_column("field", style="bold")
    overview.add_column("value", overflow="fold")
    features = ", ".join([*proto["readerFeatures"], *proto["writerFeatures"]]) or "-"
    rows = [
        ("version", doc["version"]),
        ("id", doc["id"]),
        ("name", doc["name"] or "-"),
        ("description", doc["description"] or "-"),
        ("location", doc["location"]),
        ("protocol", f"reader {proto['minReaderVersion']}, writer {proto['minWriterVersion']}"),
        ("features", features),
        ("partition columns", ", ".join(doc["partitionColumns"]) or "-"),
        ("clustering keys", clustering_text(doc["clustering"])),
        ("row tracking", row_tracking_text(doc["rowTracking"])),
        ("files", doc["numFiles"]),
        ("size (bytes)", doc["sizeBytes"]),
        ("checkpoint", "-" if doc["checkpointVersion"] is None else doc["checkpointVersion"]),
        ("created", doc["createdTime"] or "-"),
        ("committed", doc["timestamp"]),
    ]
    for key, value in rows:
        overview.add_row(key, str(value))
    return overview


def _schema(columns: Sequence[Mapping[str, Any]]) -> RichTable:
    schema = RichTable(title="Schema", title_justify="left")
    for col in ("column", "type", "nullable"):
        schema.add_column(col, overflow="fold")
    for f in columns:
        schema.add_row(f["name"], f["type"], "yes" if f["nullable"] else "no")
    return schema


def _properties(properties: Mapping[str, str]) -> RichTable:
    table = RichTable(title="Properties", title_justify="left")
    table.add_column("key", overflow="fold")
    table.add_column("value", overflow="fold")
    for key, value in sorted(properties.items()):
        table.add_row(key, value)
    return table


# ---------------------------------------------------------------------------------------------- values
def clustering_text(clustering: Mapping[str, Any] | None) -> str:
    """The overview's `clustering keys` value."""
    if clustering is None:
        return "-"
    if clustering["columns"] is None:
        return "unreadable (see below)"
    return ", ".join(clustering["columns"]) or "none (CLUSTER BY NONE)"


def row_tracking_text(tracking: Mapping[str, Any]) -> str:
    """The overview's `row tracking` value: on / off, suspended, the high-water mark."""
    if tracking["enabled"]:
        state = "on"
    elif tracking["supported"]:
        state = "row ids assigned, not enabled"
    else:
        return "off"
    if tracking["suspended"]:
        state += ", suspended"
    mark = tracking["highWaterMark"]
    return f"{state}; " + ("no row id assigned yet" if mark is None else f"high-water mark {mark}")


def identity_text(spec: Mapping[str, Any]) -> str:
    """An identity column as Delta's DDL says it, and its high-water mark."""
    mark = spec["highWaterMark"]
    return (
        f"GENERATED {spec['generated']} AS IDENTITY (START WITH {spec['start']} INCREMENT BY "
        f"{spec['step']}); " + ("no value generated yet" if mark is None else f"high-water mark {mark}")
    )


def shortened(text: str, limit: int) -> str:
    """`text` on one line, cut after `limit` characters (saying so)."""
    one = _LINE_BREAK.sub(" ", text.strip())
    if len(one) <= limit:
        return one
    return f"{one[:limit].rstrip()} ... (cut at {limit} of {len(one)} characters; --json has all)"


def _domain_text(name: str, configuration: str) -> str:
    if name.lower().startswith("delta."):
        return "(Delta feature; see --json)"
    return shortened(configuration, CONFIGURATION_CHARS) or '""'


# ---------------------------------------------------------------------------------------------- sections
def _column_lines(schema: Sequence[Mapping[str, Any]], width: int) -> list[str]:
    lines: list[str] = []
    for col in schema:
        entries = _column_entries(col)
        if entries:
            lines.extend(_wrap(col["name"], width, "  ", "  "))
            for label, text in entries:
                lines.extend(labelled(label, text, indent=4, label_width=_RULE_LABEL, width=width))
    return lines


def _column_entries(col: Mapping[str, Any]) -> list[tuple[str, str]]:
    entries = []
    if col.get("identity"):
        entries.append(("identity", identity_text(col["identity"])))
    gen = col.get("generated")
    if gen:
        note = "" if gen["enforced"] else " (not enforced: the protocol lacks generatedColumns)"
        entries.append(("generated", shortened(gen["expression"], EXPRESSION_CHARS) + note))
    for inv in col.get("invariants", []):
        where = "" if inv["column"] == col["name"] else f"on {inv['column']}: "
        entries.append(("invariant", where + shortened(inv["expression"], EXPRESSION_CHARS)))
    return entries


def _named_lines(texts: Mapping[str, str], width: int) -> list[str]:
    label_width = min(max((len(name) for name in texts), default=0), LABEL_WIDTH)
    return [
        line
        for name, text in texts.items()
        for line in labelled(name, text, indent=2, label_width=label_width, width=width)
    ]


def labelled(label: str, text: str, *, indent: int, label_width: int, width: int) -> list[str]:
    """`label` then `text` wrapped under itself at `width`; a label longer than `label_width` gets
    a line of its own (and `text` the lines below it, at the same place)."""
    pad = " " * indent
    hang = pad + " " * (label_width + 2)
    if not text:
        return _wrap(label, width, pad, pad)
    if len(label) > label_width:
        return [*_wrap(label, width, pad, pad), *_wrap(text, width, hang, hang)]
    return _wrap(text, width, f"{pad}{label:<{label_width}}  ", hang)


def _wrap(text: str, width: int, first: str, rest: str) -> list[str]:
    return textwrap.wrap(
        text, width, initial_indent=first, subsequent_indent=rest, break_on_hyphens=False
    ) or [first.rstrip()]
