"""Shared pieces of the `txnlog` commands: option types, storage options, error handling, output."""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import sys
import textwrap
from collections.abc import Iterator, Mapping, Sequence
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table as RichTable

from airflow_txnlog.engine import InvalidArgumentError, Table, TxnLogError

UriArg = Annotated[str, typer.Argument(help="Table location: a path or an fsspec URI (s3://, ...).")]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print one JSON document instead of tables.")]
VersionOpt = Annotated[
    int | None, typer.Option("--version", "-v", min=0, help="Table version (default: the latest).")
]

STORAGE_OPTION = "--storage-option"
_JSON_LITERALS = {"true": True, "false": False, "null": None}


def parse_storage_options(items: Sequence[str]) -> dict[str, Any]:
    """`KEY=VALUE` strings to a storage_options dict (typer.BadParameter on a malformed item)."""
    out: dict[str, Any] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise typer.BadParameter(f"expected KEY=VALUE, got {item!r}", param_hint=STORAGE_OPTION)
        out[key.strip()] = _option_value(key.strip(), value)
    return out


def _option_value(key: str, value: str) -> Any:
    if value.lower() in _JSON_LITERALS:
        return _JSON_LITERALS[value.lower()]
    if value.startswith(("{", "[")):
        try:
            return json.loads(value)
        except json.JSONDecodeError as exc:  # the value is not echoed: it may hold a secret
            raise typer.BadParameter(
                f"the value of {key!r} starts like JSON but is not valid JSON ({exc.msg}, column "
                f"{exc.colno}); values are text, true/false/null, or a JSON object/array",
                param_hint=STORAGE_OPTION,
            ) from None
    return value


def iso_ms(ms: int | None) -> str | None:
    """Milliseconds since the epoch as ISO-8601 UTC (`2024-01-02T03:04:05.678Z`)."""
    if ms is None:
        return None
    stamp = dt.datetime.fromtimestamp(ms / 1000, dt.UTC).isoformat(timespec="milliseconds")
    return stamp.replace("+00:00", "Z")


def short_time(iso: str | None) -> str:
    """An `iso_ms` string as `YYYY-MM-DD HH:MM:SS` for tables ('-' for none)."""
    return "-" if iso is None else iso.replace("T", " ")[:19]


def one_line(exc: BaseException) -> str:
    text = " ".join(line.strip() for line in str(exc).splitlines() if line.strip())
    return text or type(exc).__name__


@contextlib.contextmanager
def engine_errors(hints: Mapping[type[TxnLogError], str] | None = None) -> Iterator[None]:
    """Turn any TxnLogError into `error: <message>` on stderr and exit code 1 (no traceback).

    :param hints: per error class, a note appended to the message, e.g. the command-line flag that
        corresponds to the engine argument its "Help:" names.
    """
    try:
        yield
    except TxnLogError as exc:
        message = one_line(exc)
        for kind, hint in (hints or {}).items():
            if isinstance(exc, kind):
                message = f"{message} ({hint})"
                break
        typer.echo(f"error: {message}", err=True)
        raise typer.Exit(1) from None


def open_table(ctx: typer.Context, uri: str) -> Table:
    options: dict[str, Any] = (ctx.obj or {}).get("storage_options") or {}
    return Table.open(uri, storage_options=options or None)


def key_values(items: Sequence[str], what: str) -> dict[str, str]:
    """`KEY=VALUE` arguments as a mapping (InvalidArgumentError naming a malformed one)."""
    out: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise InvalidArgumentError(f"{what} {item!r} must be KEY=VALUE")
        out[key.strip()] = value
    return out


def emit_json(doc: Any) -> None:
    sys.stdout.write(json.dumps(doc, indent=2, default=str) + "\n")
    sys.stdout.flush()


def console() -> Console:
    """Plain-text console: table content is never read as rich markup or emoji codes."""
    return Console(highlight=False, markup=False, emoji=False)


def compact(value: Any, sep: str = ", ") -> str:
    if value is None:
        return ""
    if isinstance(value, Mapping):
        return sep.join(f"{k}={v}" for k, v in value.items())
    return str(value)


def key_value_table(title: str, rows: Sequence[tuple[str, Any]]) -> RichTable:
    """A two-column `field | value` table (None shown as '-')."""
    table = RichTable(title=title, show_header=False, title_justify="left")
    table.add_column("field", style="bold", no_wrap=True)
    table.add_column("value", overflow="fold")
    for key, value in rows:
        table.add_row(key, "-" if value is None or value == "" else str(value))
    return table


WIDE_COLUMNS = 120  # narrower consoles (and pipes, 80 unless COLUMNS says otherwise) get records


def print_rows(table: RichTable, rows: Sequence[Sequence[str]], *, heading: int) -> None:
    """`table` with `rows` on a console at least WIDE_COLUMNS wide; otherwise one record per row, which
    stays readable at 80 columns: the first `heading` cells on one line, then each other non-empty
    cell as `  <column>  <value>`, wrapped under its value (a cell's lines joined by ', ')."""
    out = console()
    if out.width >= WIDE_COLUMNS:
        for row in rows:
            table.add_row(*row)
        out.print(table)
        return
    names = [str(c.header) for c in table.columns]
    label = max((len(n) for n in names[heading:]), default=0)
    lines = [str(table.title)] if table.title else []
    for row in rows:
        lines.append("  ".join(cell for cell in row[:heading] if cell))
        for name, cell in zip(names[heading:], row[heading:], strict=True):
            if cell:
                lines.append(_wrapped(f"  {name:<{label}}  ", ", ".join(cell.splitlines()), out.width))
    out.print("\n".join(lines), soft_wrap=True)


def _wrapped(prefix: str, text: str, width: int) -> str:
    return textwrap.fill(
        text, width=max(width, len(prefix) + 20), initial_indent=prefix, subsequent_indent=" " * len(prefix)
    )


def print_paths(title: str, paths: Sequence[str]) -> None:
    """A heading and one path per line (plain lines: fast for thousands of files, easy to grep)."""
    if not paths:
        return
    out = console()
    out.print(f"{title}:")
    out.print("\n".join(f"  {p}" for p in paths), soft_wrap=True)
