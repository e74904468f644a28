"""How a planned-maintenance DAG turns plans into work, and work into history (no Airflow, no storage).

    plans (one `MaintenancePlan.to_dict()` per table, or a planning error)
      -> `work_items`: per table its actions with an id each; the data-rewriting actions (cluster,
         compact, purge_deletion_vectors) share the run's byte budget (bytes read + written) fairly,
         as Amoro's quota scheduling does: each table with rewrites first gets an equal share, taking
         its own actions by benefit (files removed net, then bytes reclaimed) while they fit it, so
         no one table (a huge one, or one that always ranks first) takes the whole budget run after
         run; what the shares left then goes to the remaining actions of all tables by benefit; the
         rest is kept as `over_budget` with the arithmetic. Tables are ordered by the benefit they
         get (the mapped group's map index order, which is the order Airflow schedules them in)
      -> `stage_actions`: the actions one task of the per-table group runs
         (STAGES: checkpoint -> optimize -> vacuum -> cleanup_log); a full vacuum supersedes a lite one
      -> results (one per action run) -> `history_rows`: every decision (action, skip, over budget,
         planning error) with what was predicted and what was measured, one row each.
Invariants: an action is run by exactly one stage; every decision of every plan becomes one history
row; an action without a result (its task crashed or never ran) is recorded as `no_result`, never
as done. XCom stays small whatever the tables' sizes: paths a task does not need (vacuum's and
log cleanup's files, which those re-derive; a compaction's flat list, its bins hold the same paths)
become counts; the paths a rewrite does need move to a plan file (`without_paths`, the operators'
_plan_files) and come back when its stage runs (`with_paths`); the skips of a table's partitions
that one rule decided alike (a 50,000-partition table's healthy partitions) become one skip per
table, kind and rule that counts them (`summarised`), so one history row.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

STAGES: dict[str, tuple[str, ...]] = {
    # (a compaction is planned only when no checkpoint is due; a UniForm sync after a commit's failed)
    "checkpoint": ("checkpoint", "compact_log", "uniform_sync"),
    "optimize": ("cluster", "compact", "purge_deletion_vectors"),  # (in plan order: cluster first)
    "vacuum": ("vacuum",),
    "cleanup_log": ("cleanup_log",),
}
DATA_KINDS = ("cluster", "compact", "purge_deletion_vectors")
_PATHS_NOT_NEEDED = ("vacuum", "cleanup_log", "compact")


def slim(action: Mapping[str, Any]) -> dict[str, Any]:
    """The action without the paths its task does not need (`file_count` keeps their number)."""
    out = dict(action)
    if out.get("kind") in _PATHS_NOT_NEEDED and "files" in out:
        out["file_count"] = len(out.pop("files") or [])
    return out


def bytes_read(action: Mapping[str, Any]) -> int:
    """The bytes a data rewrite reads, as its plan estimated them."""
    return int((action.get("cost") or {}).get("bytes_read") or 0)


def data_cost(action: Mapping[str, Any]) -> int:
    cost = action.get("cost") or {}
    return int(cost.get("bytes_read") or 0) + int(cost.get("bytes_written") or 0)


def _rank(action: Mapping[str, Any]) -> tuple[int, int, int]:
    benefit = action.get("benefit") or {}
    return (
        -int(benefit.get("files_removed") or 0),
        -int(benefit.get("bytes_reclaimed") or 0),
        data_cost(action),
    )


def work_items(
    plans: Sequence[Mapping[str, Any]],
    *,
    byte_budget: int | None = None,
    waited: Mapping[str, int] | None = None,
) -> list[dict[str, Any]]:
    """One item per plan (see the module docstring); `plans` entries carry `conn_id`, a planning
    failure is `{"table", "conn_id", "error"}`, a catalog location that is no table
    `{"table", "conn_id", "not_a_table": reason}` (a skip). `waited`: {table (asset form): how many
    runs in a row it had rewrites over the budget} (`waited_runs` of the history)."""
    items = [_item(p) for p in plans]
    if byte_budget is not None:
        _within_budget(items, byte_budget, waited or {})
    return sorted(items, key=lambda item: (_table_rank(item), item["table"]))


def table_key(item: Mapping[str, Any]) -> str:
    """A work item's table as the history names it (its asset form)."""
    return str(item.get("asset_uri") or item["table"])


def _within_budget(items: list[dict[str, Any]], budget: int, waited: Mapping[str, int]) -> None:
    """Fair shares of the byte budget (module docstring): the actions of tables that waited take
    their turn first, longest wait first; then each table gets an equal share of what is left (its
    own actions by benefit, each that fits); then the rest goes by benefit; the others wait."""
    ranked = sorted(
        ((a, item) for item in items for a in item["actions"] if a["kind"] in DATA_KINDS),
        key=lambda pair: (_rank(pair[0]), pair[1]["table"], pair[0]["id"]),
    )
    taken: set[int] = set()
    waiting = [p for p in ranked if waited.get(table_key(p[1]))]
    used = _take(sorted(waiting, key=lambda p: -waited[table_key(p[1])]), 0, budget, taken)
    tables = len({item["table"] for _, item in ranked})
    share = (budget - used) // max(tables, 1)
    for table in dict.fromkeys(item["table"] for _, item in ranked):
        used += _take([p for p in ranked if p[1]["table"] == table], 0, share, taken)
    used = _take(ranked, used, budget, taken)
    for action, item in ranked:
        if id(action) in taken:
            continue
        item["actions"].remove(action)
        reason = (
            f"over the run's byte budget: {used} bytes taken + {data_cost(action)} > {budget} (tables "
            f"that waited went first, then each of {tables} table(s) with rewrites had a share of "
            f"{share} bytes, then the rest went by benefit)"
        )
        item["over_budget"].append({**action, "reason": reason})


def _take(pairs: Iterable[tuple[dict[str, Any], Any]], used: int, limit: int, taken: set[int]) -> int:
    """Take each action not yet taken that still fits under `limit`, in order; the bytes used."""
    for action, _ in pairs:
        cost = data_cost(action)
        if id(action) not in taken and used + cost <= limit:
            used += cost
            taken.add(id(action))
    return used


def _item(plan: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "table": plan["table"],
        "asset_uri": plan.get("asset_uri"),
        "conn_id": plan.get("conn_id"),
        "version": plan.get("version"),
        "planned_at": plan.get("planned_at"),
        "error": plan.get("error"),
        "actions": [{**slim(a), "id": f"a{i}"} for i, a in enumerate(plan.get("actions") or [])],
        "over_budget": [],
        "skipped": summarised([slim(s) for s in plan.get("skipped") or []]) + _not_a_table(plan),
    }


def summarised(skips: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The skips, those of two or more partitions decided by the same kind and rule as one skip
    saying how many partitions, the range of values observed and one partition's reason."""
    groups: dict[tuple[Any, Any], list[Mapping[str, Any]]] = {}
    for s in skips:
        groups.setdefault((s.get("kind"), s.get("rule")), []).append(s)
    out: list[dict[str, Any]] = []
    for (kind, rule), group in groups.items():
        parts = [s for s in group if s.get("partition") is not None]
        out += [dict(s) for s in group if s.get("partition") is None or len(parts) < 2]
        if len(parts) >= 2:
            out.append(_summary(kind, rule, parts))
    return out


def _summary(kind: Any, rule: Any, parts: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    observed = [s.get("observed") for s in parts]
    numbers = [v for v in observed if isinstance(v, int | float) and not isinstance(v, bool)]
    seen: Any = {"min": min(numbers), "max": max(numbers)} if len(numbers) == len(observed) else None
    first = parts[0]
    return {
        "kind": kind, "partition": None, "rule": rule, "observed": seen,
        "threshold": first.get("threshold"), "partitions": len(parts),
        "reason": f"{len(parts)} partitions skipped by rule {rule}; e.g. partition "
        f"{json.dumps(first.get('partition'), sort_keys=True, default=str)}: {first.get('reason')}",
    }  # fmt: skip


def without_paths(item: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """(the item with no rewrite's paths, {action id: {"bins" / "files": its paths}}): each action
    (and over-budget one) keeps `bin_count` / `file_count`."""
    paths: dict[str, Any] = {}

    def strip(action: Mapping[str, Any], *, keep: bool = True) -> dict[str, Any]:
        out = dict(action)
        taken = {k: out.pop(k) for k in ("bins", "files") if k in out}
        if "bins" in taken:
            out["bin_count"] = len(taken["bins"] or [])
            out["file_count"] = sum(len(b) for b in taken["bins"] or [])
        if "files" in taken:
            out["file_count"] = len(taken["files"] or [])
        if keep and taken and action.get("kind") in DATA_KINDS:
            paths[str(action["id"])] = taken
        return out

    slimmed = {
        **item,
        "actions": [strip(a) for a in item.get("actions") or []],
        "over_budget": [strip(a, keep=False) for a in item.get("over_budget") or []],  # (not run)
    }
    return slimmed, paths


def with_paths(action: Mapping[str, Any], paths: Mapping[str, Any]) -> dict[str, Any]:
    """The action with its paths back (from `without_paths`' mapping)."""
    return {**action, **(paths.get(str(action.get("id"))) or {})}


def _not_a_table(plan: Mapping[str, Any]) -> list[dict[str, Any]]:
    """A catalog location without a Delta log, as a skip of its own."""
    reason = plan.get("not_a_table")
    if not reason:
        return []
    return [{"kind": "plan", "partition": None, "rule": "has_delta_log", "observed": False,
             "threshold": True, "reason": reason}]  # fmt: skip


def _table_rank(item: Mapping[str, Any]) -> tuple[int, int]:
    benefits = [a.get("benefit") or {} for a in item["actions"]]
    return (
        -sum(int(b.get("files_removed") or 0) for b in benefits),
        -sum(int(b.get("bytes_reclaimed") or 0) for b in benefits),
    )


def runnable(items: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The items with at least one action: what the per-table group is mapped over."""
    return [dict(item) for item in items if item["actions"]]


def stage_actions(item: Mapping[str, Any], stage: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(to run, superseded) for one stage of the per-table group."""
    kinds = STAGES[stage]
    mine = [dict(a) for a in item.get("actions") or [] if a.get("kind") in kinds]
    if stage != "vacuum" or not any(_mode(a) == "full" for a in mine):
        return mine, []
    return [a for a in mine if _mode(a) == "full"], [a for a in mine if _mode(a) != "full"]


def _mode(action: Mapping[str, Any]) -> str:
    return str((action.get("estimate") or {}).get("mode") or "lite")


def measured(result: Mapping[str, Any]) -> dict[str, Any]:
    """The measured figures of a `Table.run_maintenance` result, whatever its kind."""
    kind = result.get("kind")
    if kind in DATA_KINDS:
        actual = result.get("actual") or {}
        return {
            "files_removed": _minus(actual.get("files_removed"), actual.get("files_after")),
            "bytes_read": actual.get("bytes_read"),
            "bytes_written": actual.get("bytes_after"),
            "bytes_reclaimed": _minus(actual.get("bytes_read"), actual.get("bytes_after")),
            "committed_version": result.get("version"),
        }
    if kind == "vacuum":
        return {"files_removed": result.get("files"), "bytes_reclaimed": result.get("bytes")}
    if kind == "cleanup_log":
        files = result.get("files") or []
        return {"files_removed": len(files) + len(result.get("temp_files") or [])}
    if kind == "checkpoint":
        return {"committed_version": result.get("version")}
    return {}


def _minus(a: Any, b: Any) -> int | None:
    return None if a is None or b is None else int(a) - int(b)


def predicted(action: Mapping[str, Any]) -> dict[str, Any]:
    cost, benefit = action.get("cost") or {}, action.get("benefit") or {}
    files = benefit.get("files_removed", benefit.get("log_files_removed"))
    return {
        "files_removed": files,
        "bytes_read": cost.get("bytes_read"),
        "bytes_written": cost.get("bytes_written"),
        "bytes_reclaimed": benefit.get("bytes_reclaimed"),
    }


def as_text(value: Any) -> str | None:
    """A decision's free-form value (observed, threshold, partition, benefit) as JSON text."""
    return None if value is None else json.dumps(value, sort_keys=True, default=str)
