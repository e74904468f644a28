"""Release commands: `release show|history|publish|rollback`, multi-table releases (engine.releases).

A release log names, for a set of tables, the versions readers use together. By hand:

    txnlog release publish LOG TABLE=VERSION... [--note T] [--publish-id ID] [--create]
    txnlog release show LOG [--sequence N]          the current release (exit 1: none yet)
    txnlog release history LOG [--limit N]          the releases, newest first
    txnlog release rollback LOG --to N [--force] [--owner O] [--note T]

`publish` writes a new release (a retry with the same `--publish-id` returns the first one);
`--create` makes the log first when there is none, after every argument and table version was
checked, so bad input creates nothing. `rollback` restores every table to its version in release N
(new commits, as `txnlog restore`: it runs when asked, and refuses when other writers committed after
the current release unless `--force`; `--owner`: commits tagged owner=O are ours). Table URIs are
recorded as the engine names the table (a relative path becomes absolute), so readers anywhere find
them. The global `--storage-option`s apply to the log and to its tables. `--json` prints the release
document (camelCase keys, ISO-8601 UTC times).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Annotated, Any

import typer
from rich import box
from rich.table import Table as RichTable

from airflow_txnlog.arguments import ForeignCommitsPolicy
from airflow_txnlog.cli._output import (
    JsonOpt,
    console,
    emit_json,
    engine_errors,
    iso_ms,
    key_value_table,
    one_line,
    open_table,
    print_rows,
    short_time,
)
from airflow_txnlog.engine import (
    ForeignCommitsError,
    Release,
    ReleaseError,
    ReleaseNotFoundError,
    Releases,
)

LogArg = Annotated[str, typer.Argument(help="Release log location: a path or an fsspec URI (s3://, ...).")]
NoteOpt = Annotated[str | None, typer.Option("--note", help="A note recorded with the release.")]
# The engine's rule for publish ids (Releases.publish), checked here so that `--create` creates nothing
# for a bad one; tests/test_cli_release.py keeps the two equal.
PUBLISH_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.\-]{0,127}\Z")
CREATE_HINT = "txnlog: `release publish LOG TABLE=VERSION --create` makes one"

release_app = typer.Typer(
    name="release",
    help="Multi-table releases: publish several tables' versions as one cut, show them, roll back.",
    no_args_is_help=True,
)


# ---------------------------------------------------------------------------------------------- documents
def release_doc(release: Release) -> dict[str, Any]:
    """One release of the `release` JSON documents."""
    return {
        "sequence": release.sequence,
        "kind": release.kind,
        "rollbackTo": release.rollback_to,
        "versions": dict(release.versions),
        "tableIds": dict(release.table_ids),
        "publishId": release.publish_id,
        "note": release.note,
        "publishedAt": iso_ms(release.published_at),
        "publishedBy": release.published_by,
        "logId": release.log_id,
    }


def _storage(ctx: typer.Context) -> dict[str, Any] | None:
    return (ctx.obj or {}).get("storage_options") or None


def _open_log(ctx: typer.Context, uri: str, hint: str = CREATE_HINT) -> Releases:
    """The log at `uri` (ReleaseNotFoundError naming `hint`, the command that makes one)."""
    options = _storage(ctx)
    try:
        return Releases.open(uri, storage_options=options, table_storage_options=options)
    except ReleaseNotFoundError as exc:
        raise ReleaseNotFoundError(f"{one_line(exc)} ({hint})") from None


# ---------------------------------------------------------------------------------------------- rendering
def _by(doc: Mapping[str, Any]) -> str:
    by = doc["publishedBy"] or {}
    return " / ".join(str(by[k]) for k in ("jobId", "jobName", "jobRunId") if k in by)


def _what(doc: Mapping[str, Any]) -> str:
    return str(doc["kind"]) + ("" if doc["rollbackTo"] is None else f" (to release {doc['rollbackTo']})")


def _print_release(title: str, doc: Mapping[str, Any]) -> None:
    rows: list[tuple[str, Any]] = [
        ("sequence", doc["sequence"]),
        ("kind", _what(doc)),
        ("published at", doc["publishedAt"]),
        ("published by", _by(doc)),
        ("publish id", doc["publishId"]),
        ("note", doc["note"]),
    ]
    out = console()
    out.print(key_value_table(title, rows))
    table = RichTable(title="tables", title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False)
    table.add_column("table", overflow="fold")
    table.add_column("version", justify="right", no_wrap=True)
    table.add_column("table id", overflow="fold")
    rows_ = [[uri, str(v), doc["tableIds"].get(uri, "")] for uri, v in sorted(doc["versions"].items())]
    print_rows(table, rows_, heading=2)


def _print_history(docs: Sequence[Mapping[str, Any]]) -> None:
    table = RichTable(
        title=f"{len(docs)} release(s), newest first",
        title_justify="left",
        box=box.SIMPLE_HEAD,
        pad_edge=False,
    )
    for col in ("sequence", "kind", "published (UTC)", "by", "tables", "note"):
        numeric = col == "sequence"
        table.add_column(col, justify="right" if numeric else "left", overflow="fold", no_wrap=numeric)
    rows = [
        [
            str(d["sequence"]),
            _what(d),
            short_time(d["publishedAt"]),
            _by(d) or "-",
            "\n".join(f"{uri}={v}" for uri, v in sorted(d["versions"].items())),
            d["note"] or "-",
        ]
        for d in docs
    ]
    print_rows(table, rows, heading=2)


# ---------------------------------------------------------------------------------------------- arguments
def _pairs(items: Sequence[str]) -> list[tuple[str, int]]:
    """`TABLE=VERSION` arguments (the last '=' splits: a URI may hold one) as (uri, version)."""
    out: list[tuple[str, int]] = []
    for item in items:
        uri, sep, text = item.rpartition("=")
        if not sep or not uri.strip():
            raise typer.BadParameter(f"expected TABLE=VERSION, got {item!r}", param_hint="TABLE=VERSION")
        if not (text.strip().isascii() and text.strip().isdigit()):
            raise typer.BadParameter(
                f"the version of {uri!r} must be a non-negative integer, got {text!r}",
                param_hint="TABLE=VERSION",
            )
        out.append((uri.strip(), int(text)))
    return out


def _versions(ctx: typer.Context, pairs: Sequence[tuple[str, int]], *, check: bool) -> dict[str, int]:
    """{the engine's URI of each table: version} (each table opened; with `check`, each version read)."""
    out: dict[str, int] = {}
    given: dict[str, str] = {}
    for uri, version in pairs:
        table = open_table(ctx, uri)
        if table.uri in out:
            raise typer.BadParameter(
                f"{uri!r} names the same table as {given[table.uri]!r} ({table.uri})",
                param_hint="TABLE=VERSION",
            )
        if check:
            table.snapshot(version)  # (VersionNotFoundError before anything is created)
        out[table.uri], given[table.uri] = version, uri
    return out


def _log_for_publish(ctx: typer.Context, uri: str, create: bool) -> Releases | None:
    """The log, or None when there is none and `create` is to make it."""
    try:
        return _open_log(ctx, uri, "txnlog: --create makes one")
    except ReleaseNotFoundError:
        if not create:
            raise
        return None


def _create_log(ctx: typer.Context, uri: str) -> Releases:
    options = _storage(ctx)
    try:
        return Releases.create(uri, storage_options=options, table_storage_options=options)
    except ReleaseNotFoundError:
        raise
    except ReleaseError:  # another process made it meanwhile: publish into that one
        return _open_log(ctx, uri)


# ---------------------------------------------------------------------------------------------- commands
@release_app.command("show")
def release_show(
    ctx: typer.Context,
    log: LogArg,
    sequence: Annotated[
        int | None, typer.Option("--sequence", "-s", min=0, help="Release to show (default: the current).")
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Show the current release (or `--sequence N`): its tables and their versions (exit 1: none yet;
    with --json an object saying `"released": false`)."""
    with engine_errors():
        releases = _open_log(ctx, log)
        release = releases.current() if sequence is None else releases.get(sequence)
    if release is None:
        if as_json:  # an object that says so; still exit 1 (as `txnlog published`)
            emit_json({"log": releases.uri, "released": False, "sequence": None})
        else:
            console().print(f"nothing is released yet in {releases.uri}")
        raise typer.Exit(1)
    doc = {**release_doc(release), "released": True}
    if as_json:
        emit_json(doc)
    else:
        _print_release(f"Release {doc['sequence']}", doc)


@release_app.command("history")
def release_history(
    ctx: typer.Context,
    log: LogArg,
    limit: Annotated[int | None, typer.Option("--limit", "-n", min=0, help="At most N releases.")] = None,
    as_json: JsonOpt = False,
) -> None:
    """List the releases, newest first."""
    with engine_errors():
        docs = [release_doc(r) for r in _open_log(ctx, log).history(limit)]
    if as_json:
        emit_json(docs)
    else:
        _print_history(docs)


@release_app.command("publish")
def release_publish(
    ctx: typer.Context,
    log: LogArg,
    tables: Annotated[
        list[str],
        typer.Argument(
            metavar="TABLE=VERSION...",
            help="Tables and the versions to release (the log's other tables keep theirs).",
        ),
    ],
    *,
    note: NoteOpt = None,
    publish_id: Annotated[
        str | None,
        typer.Option(
            "--publish-id",
            help="Id of this publish: a retry with the same id returns the first release (default: new).",
        ),
    ] = None,
    create: Annotated[
        bool, typer.Option("--create", help="Create the release log first when there is none.")
    ] = False,
    as_json: JsonOpt = False,
) -> None:
    """Publish tables' versions as the next release (readers following the log read them together)."""
    pairs = _pairs(tables)
    if publish_id is not None and not PUBLISH_ID_RE.fullmatch(publish_id):
        raise typer.BadParameter(
            f"{publish_id!r}: use 1-128 letters, digits, '.', '_' or '-', starting with a letter or digit",
            param_hint="'--publish-id'",
        )
    with engine_errors():
        releases = _log_for_publish(ctx, log, create)
        versions = _versions(ctx, pairs, check=releases is None)
        before = None if releases is None else releases.current()
        if releases is None:
            releases = _create_log(ctx, log)
        release = releases.publish(versions, note=note, publish_id=publish_id)
    doc = release_doc(release)
    if as_json:
        emit_json(doc)
        return
    if before is not None and release.sequence <= before.sequence:  # (a retry of an earlier publish)
        console().print(
            f"publish id {release.publish_id} was published already, as release {release.sequence}"
        )
    _print_release(f"Released {release.sequence}", doc)


@release_app.command("rollback")
def release_rollback(
    ctx: typer.Context,
    log: LogArg,
    *,
    to: Annotated[int, typer.Option("--to", min=0, help="The release to go back to (its sequence).")],
    force: Annotated[
        bool,
        typer.Option("--force", help="Roll back even if other writers committed after the current release."),
    ] = False,
    owner: Annotated[
        str | None,
        typer.Option(
            "--owner", help="Commits tagged owner=O are ours; others after the release are foreign."
        ),
    ] = None,
    note: NoteOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Restore every table to its version in release N (new commits, as `txnlog restore`) and publish
    that as a new release of kind rollback. Run again after a failure: it converges."""
    policy: ForeignCommitsPolicy = "force" if force else "fail"  # a flag: no other value can be given
    with engine_errors({ForeignCommitsError: "txnlog: --force rolls back anyway"}):
        releases = _open_log(ctx, log)
        before = releases.current()
        release = releases.rollback(to, on_foreign_commits=policy, owner=owner, note=note)
    doc = release_doc(release)
    if as_json:
        emit_json(doc)
        return
    out = console()
    assert before is not None  # (release `to` exists, so a current one does)
    if release.sequence <= before.sequence:
        out.print(f"nothing to roll back: release {release.sequence} already restores release {to}")
    else:
        out.print(f"rolled back to release {to} as release {release.sequence}")
        for uri, version in sorted(release.versions.items()):
            if before.versions.get(uri) != version:
                was = before.versions.get(uri, "-")
                out.print(f"  {uri}: version {version} (release {before.sequence}: {was})", soft_wrap=True)
    _print_release(f"Release {release.sequence}", doc)
