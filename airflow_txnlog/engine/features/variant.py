"""Variant columns (PROTOCOL.md "Variant Data Type", unshredded): what a writer of one must do.

- The protocol names `variantType` as a reader and a writer feature (reader 3, writer 7): set at
  create (`table_features.features_for` does it for a schema with a variant), and by a schema change
  that adds a variant column. `variantType-preview` (Delta 3's name) is written the same way.
- In memory a variant is `engine.schema.VARIANT` (struct<metadata, value> of binaries marked
  `delta.variant`). Data may carry one as any struct of exactly the binaries `value` and `metadata`
  (Spark's Arrow form, in Spark's order): `like` takes such a struct as the variant where the
  table's type has one, so the cast by field name makes it the table's type.
- Files hold a variant as Spark writes it, the group `value, metadata` without field metadata
  (`to_files`); readers find the two fields by name.
- Every stored value must conform to the Variant binary encoding: `check` validates the values a
  caller hands the engine's writer (`variant_encoding`), naming the column and row of the first bad
  one; nothing is written then. Values that Spark's VariantType produced come from Spark's own
  encoder and are not checked again.
- A variant is never a partition column (not comparable: create refuses nested types) nor a
  generated column's result (`refuse_generated`); its stats are a nullCount (engine.log.stats).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pyarrow as pa

from airflow_txnlog.engine import feature_registry as registry
from airflow_txnlog.engine.errors import InvalidArgumentError
from airflow_txnlog.engine.features import variant_encoding
from airflow_txnlog.engine.schema import VARIANT, is_variant

FEATURE = registry.VARIANT_TYPE.name
FEATURES = frozenset({FEATURE, registry.VARIANT_TYPE_PREVIEW.name})
FILE_VARIANT = pa.struct([pa.field("value", pa.binary(), False), pa.field("metadata", pa.binary(), False)])


def has_variant(t: pa.DataType) -> bool:
    """Whether `t` is or holds a variant, at any depth."""
    if is_variant(t):
        return True
    if pa.types.is_struct(t):
        return any(has_variant(t.field(i).type) for i in range(t.num_fields))
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return has_variant(t.value_type)
    if pa.types.is_map(t):
        return has_variant(t.key_type) or has_variant(t.item_type)
    return False


def _is_variant_shaped(t: pa.DataType) -> bool:
    if not pa.types.is_struct(t) or t.num_fields != 2:
        return False
    kinds = {t.field(i).name: t.field(i).type for i in range(2)}
    binary = (pa.binary(), pa.large_binary())
    return set(kinds) == {"value", "metadata"} and all(k in binary for k in kinds.values())


def like(got: pa.DataType, target: pa.DataType) -> pa.DataType:
    """`got` with each struct of the binaries `value` and `metadata` that sits where `target` has a
    variant made a variant (the rest of `got` as it is)."""
    if is_variant(target):
        return VARIANT if _is_variant_shaped(got) or is_variant(got) else got
    if pa.types.is_struct(target) and pa.types.is_struct(got):
        inner = {target.field(i).name: target.field(i).type for i in range(target.num_fields)}
        fields = [got.field(i) for i in range(got.num_fields)]
        return pa.struct([f.with_type(like(f.type, inner[f.name])) if f.name in inner else f for f in fields])
    if pa.types.is_list(target) and pa.types.is_list(got):
        return pa.list_(got.value_field.with_type(like(got.value_type, target.value_type)))
    if pa.types.is_large_list(target) and pa.types.is_large_list(got):
        return pa.large_list(got.value_field.with_type(like(got.value_type, target.value_type)))
    if pa.types.is_map(target) and pa.types.is_map(got):
        item = got.item_field.with_type(like(got.item_type, target.item_type))
        return pa.map_(got.key_field, item, keys_sorted=got.keys_sorted)
    return got


def _replaced(t: pa.DataType, swap: Callable[[pa.DataType], pa.DataType | None]) -> pa.DataType:
    """`t` with every type for which `swap` gives one replaced by it, at any depth."""
    new = swap(t)
    if new is not None:
        return new
    if pa.types.is_struct(t):
        return pa.struct([f.with_type(_replaced(f.type, swap)) for f in t])
    if pa.types.is_list(t):
        return pa.list_(t.value_field.with_type(_replaced(t.value_type, swap)))
    if pa.types.is_large_list(t):
        return pa.large_list(t.value_field.with_type(_replaced(t.value_type, swap)))
    if pa.types.is_map(t):
        item = t.item_field.with_type(_replaced(t.item_type, swap))
        return pa.map_(t.key_field.with_type(_replaced(t.key_type, swap)), item, keys_sorted=t.keys_sorted)
    return t


def variants_as(data: pa.Table | pa.RecordBatch, form: pa.StructType) -> pa.Table | pa.RecordBatch:
    """`data` with every variant, at any depth, cast to `form` (a struct of the binaries `value` and
    `metadata` in some order, with some field metadata: how a file or a consumer wants it)."""
    if not any(has_variant(f.type) for f in data.schema):
        return data

    def swap(t: pa.DataType) -> pa.DataType | None:
        return form if is_variant(t) else None

    fields = [f.with_type(_replaced(f.type, swap)) for f in data.schema]
    return data.cast(pa.schema(fields, metadata=data.schema.metadata))


def to_files(data: pa.Table) -> pa.Table:
    """`data` as its parquet file holds it: each variant the group `value, metadata` (Spark's)."""
    out = variants_as(data, FILE_VARIANT)
    assert isinstance(out, pa.Table)
    return out


def _variants(arr: pa.Array, path: str) -> Iterator[tuple[str, pa.Array]]:
    """(path, array) of every variant inside `arr`; a NULL parent makes its children NULL."""
    t = arr.type
    if is_variant(t):
        yield path, arr
    elif pa.types.is_struct(t):
        for i, child in enumerate(arr.flatten()):  # (flatten applies the struct's own NULLs)
            yield from _variants(child, f"{path}.{t.field(i).name}")
    elif pa.types.is_list(t) or pa.types.is_large_list(t):
        yield from _variants(arr.flatten(), f"{path}.element")
    elif pa.types.is_map(t):
        # (the entries of this slice only: `.keys` / `.items` are those of the whole parent array)
        start = arr.offsets[0].as_py() if len(arr) else 0
        size = (arr.offsets[-1].as_py() - start) if len(arr) else 0
        yield from _variants(arr.keys.slice(start, size), f"{path}.key")
        yield from _variants(arr.items.slice(start, size), f"{path}.value")


def check(data: pa.Table) -> None:
    """InvalidArgumentError naming the column and row of the first variant value that does not
    conform to the Variant binary encoding."""
    for f in data.schema:
        if has_variant(f.type):
            for chunk in data.column(f.name).chunks:
                for path, arr in _variants(chunk, f.name):
                    variant_encoding.check_array(arr, path)


def refuse_generated(schema: pa.Schema, generated: dict[str, str]) -> None:
    """InvalidArgumentError for a generated column whose type is a variant (PROTOCOL.md)."""
    for name in generated:
        if name in schema.names and has_variant(schema.field(name).type):
            raise InvalidArgumentError(
                f"generated column {name!r} would be a variant; Delta does not allow a variant as a "
                "generated column's result (a variant may be read by one). Nothing was created"
            )
