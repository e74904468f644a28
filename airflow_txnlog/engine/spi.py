"""The engine's second door: what the package's other layers (Spark, Airflow, the CLI) build on.

Users' code imports `airflow_txnlog.engine` (tables, snapshots, transactions, results, errors). The
names here are the protocol helpers the layers above share with the engine so that they write what
the engine writes: the stats format, partition values' log form, schema JSON, row rules, generated and
identity columns, layout keys, storage, the log reader. They may change between minor releases;
import-linter contracts (pyproject.toml) let the Spark and Airflow layers import only the two doors.
The names are listed once, below, and load on first use (engine._doors).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from airflow_txnlog.engine._doors import door

if TYPE_CHECKING:  # the names below load on first use (engine._doors)
    from airflow_txnlog.engine.features import (
        clustering,
        column_defaults,
        constraints,
        generated,
        identity,
        row_tracking,
    )
    from airflow_txnlog.engine.features.char_varchar import spark_rewrites as char_varchar_rewrites
    from airflow_txnlog.engine.features.column_mapping import Names as ColumnNames
    from airflow_txnlog.engine.features.column_mapping import with_new_fields, without_mapping
    from airflow_txnlog.engine.features.constraints import CONSTRAINT_PREFIX
    from airflow_txnlog.engine.features.constraints import Rule as RowRule
    from airflow_txnlog.engine.features.constraints import check_rows as check_row_rules
    from airflow_txnlog.engine.features.constraints import compile_rules as compile_row_rules
    from airflow_txnlog.engine.features.constraints import rules as row_rules
    from airflow_txnlog.engine.features.constraints import violation_error as row_rule_violation
    from airflow_txnlog.engine.features.deletion_vectors import write_dv_file as write_deletion_vectors
    from airflow_txnlog.engine.features.feature_drop import canonical as canonical_feature
    from airflow_txnlog.engine.features.feature_drop import is_known as is_known_feature
    from airflow_txnlog.engine.features.feature_drop import supported_features
    from airflow_txnlog.engine.features.generated import enforced as generated_columns
    from airflow_txnlog.engine.features.generated import expression_columns, rewrite_columns
    from airflow_txnlog.engine.features.identity import Identity
    from airflow_txnlog.engine.features.identity import lost_race as lost_identity_race
    from airflow_txnlog.engine.features.identity import of_metadata as identity_columns
    from airflow_txnlog.engine.features.variant import check as check_variant_values
    from airflow_txnlog.engine.features.variant import variants_as
    from airflow_txnlog.engine.log import log_reader
    from airflow_txnlog.engine.log.commit_files import CommitFiles
    from airflow_txnlog.engine.log.log_paths import commit_name
    from airflow_txnlog.engine.log.stats import (
        STRING_PREFIX,
        LeafPath,
        LeafStats,
        indexed_leaves,
        json_bounds,
        stats_columns,
        stats_json,
    )
    from airflow_txnlog.engine.maintenance import publication_records, release_records
    from airflow_txnlog.engine.maintenance.curves import bits_per_column as layout_bits
    from airflow_txnlog.engine.maintenance.curves import boundaries as layout_cuts
    from airflow_txnlog.engine.maintenance.curves import layout_keys
    from airflow_txnlog.engine.maintenance.curves import sample as layout_sample
    from airflow_txnlog.engine.maintenance.layout import layout_summary, plan_layout
    from airflow_txnlog.engine.maintenance.maintenance_table import MaintenanceTable
    from airflow_txnlog.engine.maintenance.rewrite_layout import RewriteLayout
    from airflow_txnlog.engine.maintenance.rewrite_run import RewriteWork, RewriteWriter
    from airflow_txnlog.engine.properties import (
        TableProperties,
        change_data_feed,
        num_indexed_cols,
        target_file_size,
    )
    from airflow_txnlog.engine.schema import (
        HIVE_NULL,
        parse_partition_value,
        serialize_partition_value,
        type_text,
        uses_variant,
    )
    from airflow_txnlog.engine.storage import LOG_DIR, Storage, storage_for
    from airflow_txnlog.engine.validate import one_of as check_choice
    from airflow_txnlog.engine.write.provenance import job_provenance, provenance, run_owner_tag
    from airflow_txnlog.engine.write.streamed import write_streamed
    from airflow_txnlog.engine.write.writer import conform_rows, conform_to_schema, write_data_files

__all__ = [  # (for now also listed here: mypy and ruff read a static __all__; see the TODO in engine._doors)
    "CONSTRAINT_PREFIX",
    "HIVE_NULL",
    "LOG_DIR",
    "STRING_PREFIX",
    "ColumnNames",
    "CommitFiles",
    "Identity",
    "LeafPath",
    "LeafStats",
    "MaintenanceTable",
    "RewriteLayout",
    "RewriteWork",
    "RewriteWriter",
    "RowRule",
    "Storage",
    "TableProperties",
    "canonical_feature",
    "change_data_feed",
    "char_varchar_rewrites",
    "check_choice",
    "check_row_rules",
    "check_variant_values",
    "clustering",
    "column_defaults",
    "commit_name",
    "compile_row_rules",
    "conform_rows",
    "conform_to_schema",
    "constraints",
    "expression_columns",
    "generated",
    "generated_columns",
    "identity",
    "identity_columns",
    "indexed_leaves",
    "is_known_feature",
    "job_provenance",
    "json_bounds",
    "layout_bits",
    "layout_cuts",
    "layout_keys",
    "layout_sample",
    "layout_summary",
    "log_reader",
    "lost_identity_race",
    "num_indexed_cols",
    "parse_partition_value",
    "plan_layout",
    "provenance",
    "publication_records",
    "release_records",
    "rewrite_columns",
    "row_rule_violation",
    "row_rules",
    "row_tracking",
    "run_owner_tag",
    "serialize_partition_value",
    "stats_columns",
    "stats_json",
    "storage_for",
    "supported_features",
    "target_file_size",
    "type_text",
    "uses_variant",
    "variants_as",
    "with_new_fields",
    "without_mapping",
    "write_data_files",
    "write_deletion_vectors",
    "write_streamed",
]
_, __getattr__, __dir__ = door(__name__)
