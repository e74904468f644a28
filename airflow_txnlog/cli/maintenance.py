"""Maintenance commands: `savepoint create|list|delete`, `restore`, `vacuum`, `cleanup-log`, `health`.

Each builds one JSON document (camelCase keys, times as ISO-8601 UTC) that `--json` prints as is and
the default output renders with rich.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Annotated, Any

import typer
from rich import box
from rich.table import Table as RichTable

from airflow_txnlog.arguments import ForeignCommitsPolicy
from airflow_txnlog.cli._output import (
    JsonOpt,
    UriArg,
    compact,
    console,
    emit_json,
    engine_errors,
    iso_ms,
    key_value_table,
    open_table,
    print_paths,
    print_rows,
    short_time,
)
from airflow_txnlog.engine import (
    CleanupResult,
    ForeignCommitsError,
    RestoreResult,
    RetentionTooShortError,
    Savepoint,
    TableHealth,
    VacuumResult,
)

NameArg = Annotated[str, typer.Argument(help="Savepoint name: letters, digits, '.', '_' or '-'.")]
RetainHoursOpt = Annotated[
    float | None,
    typer.Option(
        "--retain-hours",
        min=0,
        help="Retention in hours (default: the table property; 7 days for vacuum, 30 days for the log).",
    ),
]

savepoint_app = typer.Typer(
    name="savepoint",
    help="Create, list and delete savepoints (named versions that vacuum keeps and restore returns to).",
    no_args_is_help=True,
)


# ---------------------------------------------------------------------------------------------- documents
def savepoint_doc(sp: Savepoint) -> dict[str, Any]:
    """One savepoint of the `savepoint` JSON documents."""
    return {
        "name": sp.name,
        "version": sp.version,
        "tableId": sp.table_id,
        "commitTimestamp": iso_ms(sp.commit_timestamp),
        "createdAt": iso_ms(sp.created_at),
        "createdBy": sp.created_by,
        "reason": sp.reason,
        "expiresAt": iso_ms(sp.expires_at),
        "expired": sp.expired(),
        "numFiles": sp.num_files,
        "sizeBytes": sp.size_bytes,
        "manifest": sp.manifest,
    }


def restore_doc(res: RestoreResult) -> dict[str, Any]:
    """The `restore` JSON document (a plan with --dry-run, else the outcome)."""
    return {
        "targetVersion": res.target_version,
        "version": res.version,
        "committed": res.committed,
        "dryRun": res.dry_run,
        "filesToAdd": list(res.files_to_add),
        "filesToRemove": list(res.files_to_remove),
        "missingFiles": list(res.missing_files),
        "foreignVersions": list(res.foreign_versions),
        "metrics": dict(res.metrics),
    }


def vacuum_doc(res: VacuumResult) -> dict[str, Any]:
    """The `vacuum` JSON document: the files deleted (or, in a dry run, that would be)."""
    return {
        "dryRun": res.dry_run,
        "retentionHours": res.retention_hours,
        "numFiles": len(res.files),
        "bytes": res.bytes,
        "files": list(res.files),
        "deleted": res.deleted,
        "startVersion": res.start_version,
        "endVersion": res.end_version,
        "metrics": dict(res.metrics),
    }


def cleanup_doc(res: CleanupResult) -> dict[str, Any]:
    """The `cleanup-log` JSON document: names inside `_delta_log/` removed (or that would be)."""
    return {
        "dryRun": res.dry_run,
        "numFiles": len(res.files),
        "files": list(res.files),
        "checkpointVersion": res.checkpoint_version,
        "oldestVersionKept": res.oldest_version_kept,
        "tempFiles": list(res.temp_files),
        "sidecarFiles": list(res.sidecar_files),
    }


def health_doc(h: TableHealth) -> dict[str, Any]:
    """The `health` JSON document."""
    return {
        "version": h.version,
        "numFiles": h.num_files,
        "sizeBytes": h.size_bytes,
        "smallFiles": h.small_files,
        "smallFileBytes": h.small_file_bytes,
        "lastCheckpointVersion": h.last_checkpoint_version,
        "commitsSinceCheckpoint": h.commits_since_checkpoint,
        "tombstones": h.tombstones,
        "reclaimableBytes": h.reclaimable_bytes,
        "savepoints": list(h.savepoints),
        "expiredSavepoints": list(h.expired_savepoints),
        "oldestLogVersion": h.oldest_log_version,
        "oldestRestorableVersion": h.oldest_restorable_version,
        "checksumProblems": h.checksum_problems,  # None: the version has no `.crc` file
    }


# ---------------------------------------------------------------------------------------------- rendering
def _print_savepoints(docs: Sequence[Mapping[str, Any]]) -> None:
    table = RichTable(
        title=f"{len(docs)} savepoint(s)", title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False
    )
    for col in ("name", "version", "files", "size", "created (UTC)", "by", "expires (UTC)", "reason"):
        numeric = col in ("version", "files", "size")
        table.add_column(col, justify="right" if numeric else "left", overflow="fold", no_wrap=numeric)
    rows = [
        [
            d["name"],
            str(d["version"]),
            str(d["numFiles"]),
            str(d["sizeBytes"]),
            short_time(d["createdAt"]),
            d["createdBy"] or "-",
            short_time(d["expiresAt"]) + (" (expired)" if d["expired"] else ""),
            d["reason"] or "-",
        ]
        for d in docs
    ]
    print_rows(table, rows, heading=1)


def _print_restore(doc: Mapping[str, Any]) -> None:
    out = console()
    if doc["dryRun"] and doc["version"] is None:
        headline = f"dry run: restoring version {doc['targetVersion']} would commit a new version"
    elif doc["committed"]:
        headline = f"restored version {doc['targetVersion']} as version {doc['version']}"
    else:
        headline = (
            f"nothing to restore: version {doc['version']} already holds version {doc['targetVersion']}"
        )
    out.print(headline)
    rows: list[tuple[str, Any]] = [
        ("target version", doc["targetVersion"]),
        ("committed version", doc["version"] if doc["committed"] else None),
        ("files re-added", len(doc["filesToAdd"])),
        ("files removed", len(doc["filesToRemove"])),
        ("missing files", len(doc["missingFiles"])),
        ("foreign versions", ", ".join(map(str, doc["foreignVersions"])) or None),
        ("metrics", compact(doc["metrics"], "\n")),
    ]
    out.print(key_value_table("Restore" + (" plan" if doc["dryRun"] else ""), rows))
    print_paths("files to re-add" if doc["dryRun"] else "files re-added", doc["filesToAdd"])
    print_paths("files to remove" if doc["dryRun"] else "files removed", doc["filesToRemove"])
    print_paths("missing files (the restore cannot commit while they are gone)", doc["missingFiles"])


def _print_vacuum(doc: Mapping[str, Any]) -> None:
    out = console()
    count, size, hours = doc["numFiles"], doc["bytes"], f"{doc['retentionHours']:g}"
    if doc["dryRun"]:
        out.print(f"dry run: vacuum would delete {count} file(s), {size} bytes (retention {hours} hours)")
        print_paths("files to delete", doc["files"])
        if count:
            out.print("run again with --execute to delete them")
    else:
        out.print(f"vacuum deleted {doc['deleted']} file(s), {size} bytes (retention {hours} hours)")
        out.print(
            f"commits: VACUUM START version {doc['startVersion']}, VACUUM END version {doc['endVersion']}"
        )
        print_paths("deleted files", doc["files"])


def _print_cleanup(doc: Mapping[str, Any], retain_hours: float | None) -> None:
    out = console()
    verb = "would delete" if doc["dryRun"] else "deleted"
    prefix = "dry run: " if doc["dryRun"] else ""
    if doc["tempFiles"]:
        out.print(
            f"{prefix}log cleanup {verb} {len(doc['tempFiles'])} stale temp file(s) in _delta_log/.tmp/"
        )
    if doc["checkpointVersion"] is None:  # nothing is old enough: say why, not "below checkpoint None"
        retention = (
            f"{retain_hours:g} hours"
            if retain_hours is not None
            else "the table's delta.logRetentionDuration, 30 days unless set"
        )
        out.print(
            f"{prefix}log cleanup: nothing to remove - no checkpoint is older than the log retention "
            f"({retention})"
        )
        return
    out.print(
        f"{prefix}log cleanup {verb} {doc['numFiles']} file(s) below checkpoint {doc['checkpointVersion']}; "
        f"oldest version kept: {doc['oldestVersionKept']}"
    )
    print_paths("log files", doc["files"])


def _print_health(doc: Mapping[str, Any]) -> None:
    rows: list[tuple[str, Any]] = [
        ("version", doc["version"]),
        ("files", doc["numFiles"]),
        ("size (bytes)", doc["sizeBytes"]),
        ("small files", f"{doc['smallFiles']} (< {doc['smallFileBytes']} bytes)"),
        ("last checkpoint", doc["lastCheckpointVersion"]),
        ("commits since checkpoint", doc["commitsSinceCheckpoint"]),
        ("tombstones", doc["tombstones"]),
        ("reclaimable (bytes)", doc["reclaimableBytes"]),
        ("savepoints", ", ".join(doc["savepoints"])),
        ("expired savepoints", ", ".join(doc["expiredSavepoints"])),
        ("oldest log version", doc["oldestLogVersion"]),
        ("oldest restorable version", doc["oldestRestorableVersion"]),
        ("version checksum", _checksum_text(doc["checksumProblems"])),
    ]
    console().print(key_value_table("Health", rows))


def _checksum_text(problems: list[str] | None) -> str:
    if problems is None:
        return "none for this version"
    return "agrees with the log" if not problems else "DISAGREES with the log: " + "; ".join(problems)


# ---------------------------------------------------------------------------------------------- savepoints
@savepoint_app.command("create")
def savepoint_create(
    ctx: typer.Context,
    uri: UriArg,
    name: NameArg,
    *,
    version: Annotated[
        int | None, typer.Option("--version", "-v", min=0, help="Version to keep (default: the latest).")
    ] = None,
    reason: Annotated[str | None, typer.Option("--reason", help="Why (recorded).")] = None,
    created_by: Annotated[str | None, typer.Option("--created-by", help="Who (recorded).")] = None,
    expires_at: Annotated[
        str | None,
        typer.Option("--expires-at", metavar="ISO", help="Expiry, ISO-8601 (naive = UTC); never by default."),
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Savepoint a version: vacuum keeps its files and `restore --savepoint` returns to it."""
    with engine_errors():
        sp = open_table(ctx, uri).create_savepoint(
            name, version=version, reason=reason, created_by=created_by, expires_at=expires_at
        )
    doc = savepoint_doc(sp)
    if as_json:
        emit_json(doc)
    else:
        console().print(
            f"savepoint {sp.name} created at version {sp.version} "
            f"({sp.num_files} file(s), {sp.size_bytes} bytes)"
        )


@savepoint_app.command("list")
def savepoint_list(ctx: typer.Context, uri: UriArg, as_json: JsonOpt = False) -> None:
    """List the savepoints, oldest version first."""
    with engine_errors():
        docs = [savepoint_doc(sp) for sp in open_table(ctx, uri).savepoints()]
    if as_json:
        emit_json(docs)
    else:
        _print_savepoints(docs)


@savepoint_app.command("delete")
def savepoint_delete(ctx: typer.Context, uri: UriArg, name: NameArg, as_json: JsonOpt = False) -> None:
    """Delete a savepoint (its files become vacuumable once no version needs them)."""
    with engine_errors():
        sp = open_table(ctx, uri).delete_savepoint(name)
    if as_json:
        emit_json(savepoint_doc(sp) if sp is not None else {"name": name, "deleted": True, "corrupt": True})
    elif sp is None:
        console().print(f"savepoint {name} deleted (its record was unreadable)")
    else:
        console().print(f"savepoint {sp.name} deleted (it kept version {sp.version})")


# ---------------------------------------------------------------------------------------------- commands
def _timestamp(value: str | None) -> str | int | None:
    """--timestamp: ISO-8601 text, or digits meaning milliseconds since the epoch."""
    if value is None:
        return None
    text = value.strip()
    return int(text) if text.isdigit() else text


def restore(
    ctx: typer.Context,
    uri: UriArg,
    *,
    version: Annotated[int | None, typer.Option("--version", "-v", min=0, help="Version to restore.")] = None,
    timestamp: Annotated[
        str | None,
        typer.Option(
            "--timestamp", metavar="TS", help="Restore the version current at TS (ISO-8601, or epoch ms)."
        ),
    ] = None,
    savepoint: Annotated[str | None, typer.Option("--savepoint", "-s", help="Savepoint to restore.")] = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Only print the plan; change nothing.")] = False,
    force: Annotated[
        bool, typer.Option("--force", help="Restore even if other writers committed since the target.")
    ] = False,
    owner: Annotated[
        str | None,
        typer.Option("--owner", help="Commits tagged owner=O are ours; others since the target are foreign."),
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Restore an earlier version, a timestamp or a savepoint as a new commit (Delta's RESTORE)."""
    if sum(x is not None for x in (version, timestamp, savepoint)) != 1:
        raise typer.BadParameter(
            "give exactly one of them", param_hint="'--version' / '--timestamp' / '--savepoint'"
        )
    policy: ForeignCommitsPolicy = "force" if force else "fail"  # a flag: no other value can be given
    with engine_errors({ForeignCommitsError: "txnlog: --force restores anyway"}):
        res = open_table(ctx, uri).restore(
            version=version,
            timestamp=_timestamp(timestamp),
            savepoint=savepoint,
            dry_run=dry_run,
            on_foreign_commits=policy,
            owner=owner,
        )
    doc = restore_doc(res)
    if as_json:
        emit_json(doc)
    else:
        _print_restore(doc)


def vacuum(
    ctx: typer.Context,
    uri: UriArg,
    *,
    retain_hours: RetainHoursOpt = None,
    execute: Annotated[
        bool, typer.Option("--execute", help="Delete the files (without it: a dry run that only lists them).")
    ] = False,
    no_enforce_retention: Annotated[
        bool,
        typer.Option(
            "--no-enforce-retention",
            help="Allow --retain-hours below delta.deletedFileRetentionDuration (unsafe with live readers).",
        ),
    ] = False,
    lite: Annotated[
        bool, typer.Option("--lite", help="Only the log's expired tombstones, no listing (VACUUM LITE).")
    ] = False,
    as_json: JsonOpt = False,
) -> None:
    """Delete data files no live version, unexpired tombstone or savepoint needs (dry run by default)."""
    with engine_errors({RetentionTooShortError: "txnlog: --no-enforce-retention"}):
        res = open_table(ctx, uri).vacuum(
            retention_hours=retain_hours,
            dry_run=not execute,
            enforce_retention=not no_enforce_retention,
            lite=lite,
        )
    doc = vacuum_doc(res)
    if as_json:
        emit_json(doc)
    else:
        _print_vacuum(doc)


def cleanup_log(
    ctx: typer.Context,
    uri: UriArg,
    retain_hours: RetainHoursOpt = None,
    execute: Annotated[
        bool, typer.Option("--execute", help="Delete the files (without it: a dry run that only lists them).")
    ] = False,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", hidden=True, help="A dry run (the default; wins over --execute).")
    ] = False,
    as_json: JsonOpt = False,
) -> None:
    """Delete commits and checkpoints older than the log retention, below a checkpoint that stays
    (a dry run unless --execute)."""
    with engine_errors():
        res = open_table(ctx, uri).cleanup_log(retention_hours=retain_hours, dry_run=dry_run or not execute)
    doc = cleanup_doc(res)
    if as_json:
        emit_json(doc)
    else:
        _print_cleanup(doc, retain_hours)


def health(
    ctx: typer.Context,
    uri: UriArg,
    small_file_bytes: Annotated[
        int | None,
        typer.Option("--small-file-bytes", min=1, help="Small-file threshold (default: targetFileSize / 4)."),
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Size, small files, commits since checkpoint, reclaimable bytes, savepoints, oldest restorable."""
    with engine_errors():
        doc = health_doc(open_table(ctx, uri).health(small_file_bytes=small_file_bytes))
    if as_json:
        emit_json(doc)
    else:
        _print_health(doc)
