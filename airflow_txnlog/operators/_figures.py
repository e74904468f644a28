"""What a commit did, in the figures asset events and OpenLineage carry: rows and files added,
removed and updated, read from the commit's operationMetrics (Delta's names, per operation).

Shared by the operators' asset events (`_base.event_extra`) and their OpenLineage facets
(`_lineage`); it imports neither, so neither imports the other for it. No engine import: DAG files
parse without pyarrow.
"""

from __future__ import annotations

from typing import Any

# Our event keys -> commitInfo operationMetrics names (Delta's), per operation; the first one present
# wins. Rows count logical changes (rows rewritten unchanged, Delta's "copied" rows, are not added).
_FIGURES: dict[str, dict[str, tuple[str, ...]]] = {
    "WRITE": {
        "num_added_rows": ("numOutputRows",),
        "num_removed_rows": ("numDeletedRows",),
        "num_added_files": ("numAddedFiles", "numFiles"),
        "num_removed_files": ("numRemovedFiles",),
    },
    "DELETE": {
        "num_removed_rows": ("numDeletedRows",),
        "num_added_files": ("numAddedFiles",),
        "num_removed_files": ("numRemovedFiles",),
    },
    "UPDATE": {
        "num_updated_rows": ("numUpdatedRows",),
        "num_added_files": ("numAddedFiles",),
        "num_removed_files": ("numRemovedFiles",),
    },
    "MERGE": {
        "num_added_rows": ("numTargetRowsInserted",),
        "num_updated_rows": ("numTargetRowsUpdated",),
        "num_removed_rows": ("numTargetRowsDeleted",),
        "num_added_files": ("numTargetFilesAdded",),
        "num_removed_files": ("numTargetFilesRemoved",),
    },
    "OPTIMIZE": {"num_added_files": ("numAddedFiles",), "num_removed_files": ("numRemovedFiles",)},
    "RESTORE": {"num_added_files": ("numRestoredFiles",), "num_removed_files": ("numRemovedFiles",)},
}
# Figures an operation fixes by what it is, though no metric names them.
_ZERO: dict[str, tuple[str, ...]] = {
    "DELETE": ("num_added_rows",),
    "UPDATE": ("num_added_rows", "num_removed_rows"),
    "OPTIMIZE": ("num_added_rows", "num_removed_rows"),
}


def commit_figures(entry: dict[str, Any]) -> dict[str, int]:
    """Rows and files added / removed by a commit, from its operationMetrics; unknown ones left out."""
    operation = str(entry.get("operation", ""))
    metrics = entry.get("operationMetrics") or {}
    figures = dict.fromkeys(_ZERO.get(operation, ()), 0)
    if operation == "WRITE" and (entry.get("operationParameters") or {}).get("mode") == "Append":
        figures.update(num_removed_rows=0, num_removed_files=0)  # an append removes nothing
    for key, names in _FIGURES.get(operation, {}).items():
        name = next((n for n in names if n in metrics), None)
        if name is not None:
            figures[key] = int(metrics[name])  # the log stores metrics as strings
    return figures
