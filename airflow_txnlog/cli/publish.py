"""Publication commands: `publish` (mark an audited version) and `published` (what a channel names).

The by-hand side of write-audit-publish (engine.maintenance.publications): after checking a version yourself,
`txnlog publish TABLE --version N` makes readers that follow the channel see it. Both print one JSON
document with `--json` (camelCase keys, ISO-8601 UTC times), else a rich table.
"""

from __future__ import annotations

from typing import Annotated, Any

import typer

from airflow_txnlog.cli._output import (
    JsonOpt,
    UriArg,
    console,
    emit_json,
    engine_errors,
    iso_ms,
    key_value_table,
    open_table,
)
from airflow_txnlog.engine import DEFAULT_CHANNEL, Publication

ChannelOpt = Annotated[
    str, typer.Option("--channel", help="Publication channel: letters, digits, '.', '_' or '-'.")
]


def publication_doc(pub: Publication) -> dict[str, Any]:
    return {
        "channel": pub.channel,
        "published": True,
        "version": pub.version,
        "previousVersion": pub.previous_version,
        "commitTimestamp": iso_ms(pub.commit_timestamp),
        "publishedAt": iso_ms(pub.published_at),
        "publishedBy": pub.published_by,
        "tableId": pub.table_id,
    }


def _print(title: str, doc: dict[str, Any]) -> None:
    by = doc["publishedBy"] or {}
    rows = [
        ("channel", doc["channel"]),
        ("version", doc["version"]),
        ("previous version", doc["previousVersion"]),
        ("commit time", doc["commitTimestamp"]),
        ("published at", doc["publishedAt"]),
        ("published by", " / ".join(str(by[k]) for k in ("jobId", "jobName", "jobRunId") if k in by)),
    ]
    console().print(key_value_table(title, rows))


def publish(
    ctx: typer.Context,
    uri: UriArg,
    version: Annotated[
        int | None, typer.Option("--version", min=0, help="The audited version (default: the latest).")
    ] = None,
    channel: ChannelOpt = DEFAULT_CHANNEL,
    as_json: JsonOpt = False,
) -> None:
    """Publish an audited version on a channel (readers following the channel see it from now on)."""
    with engine_errors():
        doc = publication_doc(open_table(ctx, uri).publish(version, channel=channel))
    if as_json:
        emit_json(doc)
    else:
        _print("Published", doc)


def published(
    ctx: typer.Context, uri: UriArg, channel: ChannelOpt = DEFAULT_CHANNEL, as_json: JsonOpt = False
) -> None:
    """The version a channel currently publishes (exit 1 when nothing is published; with --json an
    object saying `"published": false`)."""
    with engine_errors():
        pub = open_table(ctx, uri).publication(channel)
    if pub is None:
        if as_json:  # an object that says so (null alone told a script nothing); still exit 1
            emit_json({"channel": channel, "published": False, "version": None})
        else:
            console().print(f"nothing is published on channel {channel!r}")
        raise typer.Exit(1)
    doc = publication_doc(pub)
    if as_json:
        emit_json(doc)
    else:
        _print("Publication", doc)
