"""Release operators: publish several tables as one release, and roll a release log back.

A release log (engine.releases, docs/releases.md) records the versions, one per table, that readers
may use *together*. The pipeline's tasks write and audit the tables as usual; then

- `TxnLogReleaseOperator` publishes the audited versions as the log's next release (`versions`
  {table URI: version}, or `from_tasks` {table URI: task id} whose XCom holds the version: the int
  `TxnLogPublishOperator` returns, or the {"version": ...} of the write, DML, savepoint and
  maintenance operators). It creates the log on first use (`create=True`). Its publish id defaults
  to `<dag_id>.<task_id>.<run_id>` (and the map index of a mapped task), made safe, so a retry of the
  task returns the release its earlier try published instead of publishing twice; a retry that would
  release *other* versions under that id (an upstream task ran again) is refused, nothing published.
- `TxnLogReleaseRollbackOperator` puts every table of the log back to a release (`to`; None: the
  current one, i.e. it undoes what was committed after it) and publishes that as a release of kind
  "rollback". Commits tagged with this DAG run's owner tag (or `owner_tag`) are its own; any other
  commit after the current release is another writer's and makes it refuse (`ForeignCommitsError`,
  nothing restored) unless `on_foreign_commits="force"`. With `to=None`, tables that are all at their
  current-release versions mean nothing to undo: no restore, no new release (so running it twice
  publishes once).

Both return {"sequence", "versions"} (the rollback also "kind" and "rollback_to") and emit an event
on the log's asset (`assets.release_asset`, in their outlets by default) with the extra `sequence`,
`previous_sequence`, `kind`, `rollback_to`, `versions`, `note`, `publish_id` and the publishing
`dag_id` / `task_id` / `run_id`. A release this DAG run did not publish (another run's, found by its
publish id, or the current release when a rollback had nothing to undo) emits none; a retry of the
run that published emits the event again (at least once, as `TxnLogPublishOperator`).

Table URIs go through the connection (`TxnLogHook.resolve_uri`; local paths made absolute, so every
task names a table alike in the records). One `txnlog` connection reaches the log and its tables:
the log with the options for its URI, the tables with the options for theirs, which must be one
mapping (`Releases` takes one for every table of a log). OpenLineage: every table of the release is
an input at its released version (tables a rollback restored are outputs at the restore's version),
the release log an output (operators/_release_lineage.py). Plain arguments are checked when the
operator is built, templated ones once rendered; the engine (pyarrow) loads only in `execute`.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Any

from airflow.sdk import BaseOperator, Context

from airflow_txnlog._shown import shown
from airflow_txnlog.arguments import ForeignCommitsPolicy, check_choice, invalid, renders_later, str_mapping
from airflow_txnlog.assets import release_asset
from airflow_txnlog.engine.spi import job_provenance  # light: no pyarrow
from airflow_txnlog.hooks.txnlog import TxnLogHook
from airflow_txnlog.operators._base import context_provenance, run_owner, safe_name, writer_fields
from airflow_txnlog.triggers.release import sequence_number

if TYPE_CHECKING:
    from airflow_txnlog.engine import Release, Releases
    from airflow_txnlog.operators._lineage import Lineage

DEFAULT_ROLLBACK_WINDOW = 5  # the engine's default (engine.releases)
_PUBLISH_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.\-]{0,127}$")  # the engine's rule (engine.validate)


# ------------------------------------------------------------------ shared with the callback
def table_key(hook: TxnLogHook, table_uri: str) -> str:
    """A table URI as the release records name it: through the connection, local paths absolute."""
    uri = hook.resolve_uri(table_uri.strip()).rstrip("/")
    head, sep, _ = uri.partition("://")
    return uri if sep and head.isalnum() else os.path.abspath(uri)


def _table_options(hook: TxnLogHook, uris: Sequence[str]) -> dict[str, Any] | None:
    """The one storage-options mapping of the tables (InvalidArgumentError when they need several)."""
    found = [hook.storage_options_for(uri) for uri in uris]
    if any(options != found[0] for options in found[1:]):
        raise invalid(
            f"the tables {sorted(uris)} need different storage options from connection "
            f"{hook.txnlog_conn_id!r}, and a release log reaches all its tables with one mapping. "
            "Help: keep a log's tables on one store"
        )
    return (found[0] or None) if found else None


def releases_for(
    hook: TxnLogHook,
    release_log_uri: str,
    table_uris: Sequence[str] = (),
    *,
    create: bool = False,
    rollback_window: int = DEFAULT_ROLLBACK_WINDOW,
) -> Releases:
    """The release log through the connection (created when `create` and there is none). Its table
    options are those of `table_uris` and of the tables of its current release."""
    from airflow_txnlog.engine import ReleaseError, ReleaseNotFoundError, Releases  # noqa: PLC0415
    from airflow_txnlog.engine.spi import release_records, storage_for  # noqa: PLC0415

    uri = hook.resolve_uri(release_log_uri)
    log_options = hook.storage_options_for(uri) or None
    current = release_records.current_release(storage_for(uri, log_options))
    tables = sorted({*table_uris, *(current.versions if current is not None else ())})
    options: dict[str, Any] = {
        "storage_options": log_options,
        "table_storage_options": _table_options(hook, tables),
    }
    try:
        return Releases.open(uri, **options)
    except ReleaseNotFoundError:
        if not create:
            raise
    try:
        return Releases.create(uri, rollback_window=rollback_window, **options)
    except ReleaseError:  # another task created it meanwhile
        return Releases.open(uri, **options)


@dataclass(frozen=True)
class RollbackOutcome:
    """What `roll_back` did: `release` is the log's current release afterwards; `before` the one
    before; `rolled_back` False when there was nothing to undo (then `release` is `before`)."""

    release: Release
    before: Release
    rolled_back: bool


def moved_tables(current: Release) -> dict[str, tuple[int, int]]:
    """{table URI: (released version, latest version)} of the tables committed to since `current`."""
    from airflow_txnlog.engine import Table  # noqa: PLC0415 - no pyarrow at parse time

    out: dict[str, tuple[int, int]] = {}
    for uri, version in current.versions.items():
        table = Table.open(uri, storage_options=current.table_storage_options, lazy=True)  # (lists only)
        latest = table.latest_version()
        if latest != version:
            out[uri] = (version, latest)
    return out


def roll_back(
    log: Releases, to: int | None, *, policy: ForeignCommitsPolicy, owner: str, note: str | None
) -> RollbackOutcome:
    """Roll every table of `log` back to release `to` (None: the current release, and nothing at
    all when no table moved since it). ReleaseNotFoundError before the first release;
    ForeignCommitsError (nothing restored) for another writer's commit under policy "fail"."""
    from airflow_txnlog.engine import ReleaseNotFoundError  # noqa: PLC0415

    before = log.current()
    if before is None:
        raise ReleaseNotFoundError(f"release log {log.uri!r} has no release yet: nothing to roll back to")
    if to is None:
        if not moved_tables(before):
            return RollbackOutcome(before, before, rolled_back=False)
        to = before.sequence
    release = log.rollback(to=to, on_foreign_commits=policy, owner=owner, note=note)
    return RollbackOutcome(release, before, rolled_back=release.sequence != before.sequence)


def published_by_run(release: Release, context: Context) -> bool:
    """True when this DAG run published `release` (any task, any try)."""
    job = job_provenance(release.published_by)
    return job is not None and (job.dag_id, job.run_id) == (context["dag"].dag_id, context["run_id"])


def release_extra(context: Context, release: Release, *, task_id: str) -> dict[str, Any]:
    """The extra of a release log's asset event."""
    return {
        "sequence": release.sequence,
        "previous_sequence": release.sequence - 1 if release.sequence > 0 else None,
        "kind": release.kind,
        "rollback_to": release.rollback_to,
        "versions": dict(release.versions),
        "note": release.note,
        "publish_id": release.publish_id,
        **writer_fields(context, task_id=task_id),
    }


def _text(name: str, value: object, *, empty_ok: bool = True) -> None:
    if value is not None and (not isinstance(value, str) or (not empty_ok and not value.strip())):
        what = "a string" if empty_ok else "a non-empty string"
        raise invalid(f"{name} must be None or {what}; got {shown(value)}")


# ------------------------------------------------------------------ operators
class _ReleaseLogOperator(BaseOperator):
    """What both release operators share: the log, the hook, the asset event, OpenLineage."""

    template_fields: Sequence[str] = ("release_log_uri", "txnlog_conn_id", "note")
    ui_color = "#d4f4dd"

    def __init__(
        self,
        *,
        release_log_uri: str,
        note: str | None = None,
        txnlog_conn_id: str = TxnLogHook.default_conn_name,
        emit_asset_event: bool = True,
        **kwargs: Any,
    ) -> None:
        if not isinstance(release_log_uri, str) or not release_log_uri.strip():
            raise invalid(f"release_log_uri must be a non-empty string; got {shown(release_log_uri)}")
        _text("note", note)
        if emit_asset_event and "outlets" not in kwargs and not renders_later(release_log_uri):
            kwargs["outlets"] = [release_asset(release_log_uri)]
        super().__init__(**kwargs)
        self.release_log_uri = release_log_uri
        self.note = note
        self.txnlog_conn_id = txnlog_conn_id
        self.emit_asset_event = emit_asset_event
        self._lineage_versions: dict[str, int] = {}  # the release execute left current (OpenLineage)
        self._lineage_committed: set[str] = set()  # tables a rollback restored

    @cached_property
    def hook(self) -> TxnLogHook:
        return TxnLogHook(txnlog_conn_id=self.txnlog_conn_id)

    def emit_release(self, context: Context, release: Release) -> None:
        """The log's asset event for `release`, when this DAG run published it (module docstring)."""
        self._lineage_versions = dict(release.versions)
        asset = release_asset(self.release_log_uri)
        if not self.emit_asset_event or asset not in (self.outlets or []):
            return
        if not published_by_run(release, context):
            self.log.info("release %s was not published by this run: no asset event", release.sequence)
            self.outlets = [o for o in (self.outlets or []) if o != asset]  # (the runner's copy: see _base)
            return
        context["outlet_events"][asset].extra = release_extra(context, release, task_id=self.task_id)

    def lineage_tables(self) -> list[str]:
        """The tables known before `execute` (OpenLineage START event), named only."""
        return []

    def get_openlineage_facets_on_start(self) -> Lineage:
        from airflow_txnlog.operators._release_lineage import start_lineage  # noqa: PLC0415

        return start_lineage(self.hook, self.release_log_uri, self.lineage_tables())

    def get_openlineage_facets_on_complete(self, task_instance: Any) -> Lineage:
        from airflow_txnlog.operators._release_lineage import release_lineage  # noqa: PLC0415

        return release_lineage(
            self.hook, self.release_log_uri, self._lineage_versions, committed=self._lineage_committed
        )


class TxnLogReleaseOperator(_ReleaseLogOperator):
    """Publish tables' versions as the next release of a release log (see the module docstring).

    :param release_log_uri: the release log (absolute, or relative to the connection's base
        location). Templated.
    :param versions: {table URI: version} (templated: versions may render as text from an XCom);
    :param from_tasks: or {table URI: task id}: the version is that task's XCom (an int, or a dict
        with "version"). Exactly one of the two.
    :param note: stored with the release. Templated.
    :param publish_id: makes a retry return the first release; default `<dag>.<task>.<run>` made
        safe. Letters, digits, '_', '.', '-' (at most 128, a letter or digit first). Templated.
    :param create: create the log when there is none (with `rollback_window`: the releases besides
        the current one whose versions the tables keep).
    Returns {"sequence", "versions"} (every table of the release).
    """

    template_fields: Sequence[str] = ("release_log_uri", "txnlog_conn_id", "versions", "note", "publish_id")

    def __init__(
        self,
        *,
        versions: Mapping[str, int | str] | str | None = None,
        from_tasks: Mapping[str, str] | None = None,
        publish_id: str | None = None,
        create: bool = True,
        rollback_window: int = DEFAULT_ROLLBACK_WINDOW,
        **kwargs: Any,
    ) -> None:
        _check_sources(versions, from_tasks)
        if publish_id is not None and not renders_later(publish_id):
            _check_publish_id(publish_id)
        if not isinstance(create, bool):
            raise invalid(f"create must be True or False; got {shown(create)}")
        if isinstance(rollback_window, bool) or not isinstance(rollback_window, int) or rollback_window < 0:
            raise invalid(f"rollback_window must be an integer >= 0; got {shown(rollback_window)}")
        super().__init__(**kwargs)
        self.versions = versions
        self.from_tasks = dict(from_tasks) if from_tasks is not None else None
        self.publish_id = publish_id
        self.create = create
        self.rollback_window = rollback_window

    def lineage_tables(self) -> list[str]:
        named = self.from_tasks if self.from_tasks is not None else self.versions
        if not isinstance(named, Mapping):
            return []
        return [table_key(self.hook, uri) for uri in named if not renders_later(uri)]

    def execute(self, context: Context) -> dict[str, Any]:
        versions = self._wanted(context)
        publish_id = self._publish_id(context)
        _text("note", self.note)  # rendered by now
        log = releases_for(
            self.hook,
            self.release_log_uri,
            list(versions),
            create=self.create,
            rollback_window=self.rollback_window,
        )
        with context_provenance(context):
            release = log.publish(versions, note=self.note, publish_id=publish_id)
        _check_same(release, versions, publish_id)
        self.log.info(
            "release %s of %s (publish id %s): %s",
            release.sequence, log.uri, release.publish_id, release.versions,
        )  # fmt: skip
        self.emit_release(context, release)
        return {"sequence": release.sequence, "versions": dict(release.versions)}

    def _wanted(self, context: Context) -> dict[str, int]:
        """{table key: version} from the rendered `versions` or the XComs of `from_tasks`."""
        if self.from_tasks is not None:
            ti = context["ti"]
            pairs = {uri: _pushed_version(ti, task_id) for uri, task_id in self.from_tasks.items()}
        else:
            _check_versions(self.versions, rendered=True)
            assert isinstance(self.versions, Mapping)
            pairs = {uri: _table_version(f"the version of {uri!r}", v) for uri, v in self.versions.items()}
        out: dict[str, int] = {}
        for uri, version in pairs.items():
            key = table_key(self.hook, uri)
            if key in out:
                raise invalid(f"{uri!r} names table {key!r} a second time in the release")
            out[key] = version
        return out

    def _publish_id(self, context: Context) -> str:
        if self.publish_id is not None:
            return _check_publish_id(self.publish_id)
        ti = context.get("ti") or context.get("task_instance")
        map_index = getattr(ti, "map_index", None)
        parts = [context["dag"].dag_id, self.task_id, context["run_id"]]
        if isinstance(map_index, int) and not isinstance(map_index, bool) and map_index >= 0:
            parts.append(str(map_index))
        return safe_name(*parts)


class TxnLogReleaseRollbackOperator(_ReleaseLogOperator):
    """Roll every table of a release log back to a release, published as a release of kind "rollback".

    :param release_log_uri: the release log. Templated.
    :param to: the release to go back to; None: the current release (undo every commit since it;
        nothing at all when there is none). Templated.
    :param on_foreign_commits: "fail" (default: refuse when another writer committed to a table after
        the current release) or "force" (`ForeignCommitsPolicy`).
    :param owner_tag: commits tagged {"owner": owner_tag} are this task's own; default the DAG run's
        owner tag (every task of this run). Templated. (Not `owner`: that is Airflow's task owner,
        which `default_args={"owner": ...}` sets on every task.)
    :param note: stored with the rollback release. Templated.
    Returns {"sequence", "versions", "kind", "rollback_to"} of the log's current release afterwards.
    """

    template_fields: Sequence[str] = ("release_log_uri", "txnlog_conn_id", "to", "note", "owner_tag")
    ui_color = "#f4e1d4"

    def __init__(
        self,
        *,
        to: int | str | None = None,
        on_foreign_commits: ForeignCommitsPolicy = "fail",
        owner_tag: str | None = None,
        **kwargs: Any,
    ) -> None:
        if not renders_later(to):
            sequence_number("to", to)
        check_choice("on_foreign_commits", on_foreign_commits, ForeignCommitsPolicy)
        _text("owner_tag", owner_tag, empty_ok=False)
        super().__init__(**kwargs)
        self.to = to
        self.on_foreign_commits = on_foreign_commits
        self.owner_tag = owner_tag

    def execute(self, context: Context) -> dict[str, Any]:
        to = sequence_number("to", self.to)  # rendered by now
        _text("owner_tag", self.owner_tag, empty_ok=False)
        _text("note", self.note)
        log = releases_for(self.hook, self.release_log_uri)
        owner = self.owner_tag or run_owner(context)
        with context_provenance(context):
            outcome = roll_back(log, to, policy=self.on_foreign_commits, owner=owner, note=self.note)
        release = outcome.release
        if outcome.rolled_back:
            self.log.warning(
                "rolled %s back to release %s: release %s, versions %s",
                log.uri, release.rollback_to, release.sequence, release.versions,
            )  # fmt: skip
            before = outcome.before.versions
            self._lineage_committed = {u for u, v in release.versions.items() if v != before.get(u)}
        else:
            self.log.info(
                "nothing to roll back: release %s (%s) of %s stays current",
                release.sequence, release.kind, log.uri,
            )  # fmt: skip
        self.emit_release(context, release)
        return {
            "sequence": release.sequence,
            "versions": dict(release.versions),
            "kind": release.kind,
            "rollback_to": release.rollback_to,
        }


# ------------------------------------------------------------------ argument checks
def _check_sources(versions: object, from_tasks: object) -> None:
    if (versions is None) == (from_tasks is None):
        raise invalid(
            "give exactly one of versions ({table URI: version}) and from_tasks ({table URI: task id})"
        )
    if from_tasks is not None:
        if not str_mapping("from_tasks", from_tasks):
            raise invalid("from_tasks must name at least one table")
        return
    if not renders_later(versions):
        _check_versions(versions, rendered=False)


def _check_versions(versions: object, *, rendered: bool) -> None:
    """A non-empty mapping of table URI to version (templates inside it are checked once rendered)."""
    if not isinstance(versions, Mapping) or not versions:
        raise invalid(f"versions must be a non-empty mapping of table URI to version; got {shown(versions)}")
    for uri, version in versions.items():
        if not isinstance(uri, str) or not uri.strip():
            raise invalid(f"a table URI in versions must be a non-empty string; got {shown(uri)}")
        if rendered or not renders_later(version):
            _table_version(f"the version of {uri!r}", version)


def _table_version(name: str, value: object) -> int:
    number = sequence_number(name, value, what="a table version")
    if number is None:
        raise invalid(f"{name} must be a table version (an integer >= 0); got {shown(value)}")
    return number


def _pushed_version(ti: Any, task_id: str) -> int:
    """The version task `task_id` pushed: an int, or a dict's "version" (the write operators')."""
    pushed = ti.xcom_pull(task_ids=task_id)
    version = pushed.get("version") if isinstance(pushed, Mapping) else pushed
    if version is None:
        raise invalid(
            f"task {task_id!r} pushed no version (XCom {shown(pushed)}): it committed nothing, or did not "
            "run. Nothing was published. Help: release the version it left, with versions={uri: version}"
        )
    return _table_version(f"the version task {task_id!r} pushed", version)


def _check_publish_id(value: object) -> str:
    if not isinstance(value, str) or not _PUBLISH_ID.match(value):
        raise invalid(
            "publish_id must be letters, digits, '_', '-' or '.' (at most 128, a letter or digit first); "
            f"got {shown(value)}"
        )
    return value


def _check_same(release: Release, versions: Mapping[str, int], publish_id: str) -> None:
    """ReleaseError when the release found under `publish_id` (an earlier try's) has other versions."""
    from airflow_txnlog.engine import ReleaseError  # noqa: PLC0415
    from airflow_txnlog.engine.spi import release_records  # noqa: PLC0415

    named = {release_records.normalize(uri): v for uri, v in release.versions.items()}
    other = {uri: v for uri, v in versions.items() if named.get(release_records.normalize(uri)) != v}
    if other:
        raise ReleaseError(
            f"release {release.sequence} was published under publish id {publish_id!r} (by an earlier try, "
            f"or a task given the same publish_id) with other versions than this try asks for ({other}); "
            "nothing was published. Help: give another publish_id (e.g. with '{{ ti.try_number }}') to "
            "publish these versions too"
        )
