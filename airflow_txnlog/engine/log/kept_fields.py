"""How `CheckpointColumns.derive` keeps a field it streamed: compressed batches, or nothing at all
where the derived result gives the field back.

A big field (`add.stats`, the JSON stats text) is derived batch by batch into something small (the
parsed stats). A `KeepField` asks that the field stay available too, for the few rows a later
`take` wants (the `AddFile`s of a filtered `files()`). Per batch, either:

- `packed`: the batch as a zstd-compressed Arrow IPC stream (~1/6 of JSON stats text), restored
  only when a `take` needs one of its rows (`take_packed`);
- None, where `KeepField.exact` says the batch's result holds all the field says: `take` renders
  those rows from the result (`Rendered`, e.g. `stats_struct.struct_json`, as a checkpoint's
  `stats_parsed` is rendered).

Invariants: rows are addressed by their position in the field's rows (the order `read` gives);
a take of a few rows never copies the whole result or field (a chunked result is taken from chunk by
chunk: pyarrow's take of a chunked struct array would join all chunks first).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.ipc


@dataclass(frozen=True)
class KeepField:
    """A function for `CheckpointColumns.derive` whose input field is kept too, as `read` would
    keep it: the JSON stats of a checkpoint without `stats_parsed` parsed for a snapshot's file
    table, whose `AddFile`s need the text later.

    With `exact` and `render`, a batch whose result holds all its field says (`exact` gives the
    result and whether it does: stats JSON parsed with no key the struct lacks) is not kept at all:
    `take` renders its rows from the result (`render`, e.g. `stats_struct.struct_json`), as it
    renders a checkpoint's `stats_parsed`. Only the other batches are kept compressed."""

    fn: Callable[[pa.Array], pa.Array]
    exact: Callable[[pa.Array], tuple[pa.Array, bool]] | None = None
    render: Callable[[pa.Array], pa.Array] | None = None

    def __call__(self, arr: pa.Array) -> pa.Array:
        return self.fn(arr)


def packed(piece: pa.Array) -> pa.Buffer:
    """A batch of a field as a zstd-compressed Arrow IPC stream (offsets and validity included)."""
    sink = pa.BufferOutputStream()
    options = pa.ipc.IpcWriteOptions(compression="zstd")
    with pa.ipc.new_stream(sink, pa.schema([("v", piece.type)]), options=options) as writer:
        writer.write_batch(pa.record_batch([piece], names=["v"]))
    return sink.getvalue()


def unpacked(packed: pa.Buffer) -> pa.Array:
    table = pa.ipc.open_stream(packed).read_all()
    return table.column(0).chunk(0) if table.column(0).num_chunks == 1 else table.column(0).combine_chunks()


@dataclass(frozen=True)
class Rendered:
    """What gives back the batches of a field `derive` did not keep: `render` of `result`'s rows
    (`result`: the derived array, one row per field row), as type `type`."""

    result: pa.Array
    render: Callable[[pa.Array], pa.Array]
    type: pa.DataType

    def take(self, at: np.ndarray) -> pa.Array:
        return self.render(_take_rows(self.result, at)).cast(self.type)


def _take_rows(arr: pa.Array | pa.ChunkedArray, at: np.ndarray) -> pa.Array:
    """`arr.take(at)` (ascending `at`) as one array, chunk by chunk: pyarrow's take of a chunked
    struct array joins all its chunks first (a copy of a million rows for a few)."""
    if not isinstance(arr, pa.ChunkedArray):
        return arr.take(pa.array(at, pa.int64()))
    starts = np.cumsum([0] + [len(c) for c in arr.chunks])
    which = np.searchsorted(starts, at, side="right") - 1
    parts = [arr.chunk(i).take(pa.array(at[which == i] - starts[i], pa.int64())) for i in np.unique(which)]
    return pa.concat_arrays(parts) if parts else pa.array([], type=arr.type)


def take_packed(
    packed: list[tuple[pa.Buffer | None, int]], rows: pa.Array, t: pa.DataType, rendered: Rendered | None
) -> pa.Array:
    """`take(rows)` (ascending) of the field kept as `packed` batches, restoring only the batches
    holding those rows (rendering them from `rendered` where a batch was not kept)."""
    starts = np.cumsum([0] + [n for _, n in packed])
    at = rows.to_numpy(zero_copy_only=False)
    which = np.searchsorted(starts, at, side="right") - 1
    out = []
    for i in np.unique(which):
        buffer, picked = packed[i][0], at[which == i]
        if buffer is None:
            assert rendered is not None  # (`derive` keeps no batch as None without it)
            out.append(rendered.take(picked))
        else:
            out.append(unpacked(buffer).take(pa.array(picked - starts[i], pa.int64())))
    return pa.concat_arrays(out) if out else pa.array([], type=t)
