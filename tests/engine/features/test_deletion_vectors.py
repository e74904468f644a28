"""Deletion vectors on read (engine.features.deletion_vectors): the descriptor's encodings as PROTOCOL.md
gives them, a table another writer gave DVs (inline and on disk), corrupt DVs, and the reference tables.

Expected values come from outside the engine: the protocol's own examples (the UUID path), bitmaps
serialized here with pyroaring in the portable format Delta writes, and Delta Kernel's expected
answers for the reference tables (cited in tests/compat/test_golden.py)."""

from __future__ import annotations

import json
import shutil
import struct
import uuid
import zlib
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st
from pyroaring import BitMap64

from airflow_txnlog.engine import LogCorruptedError, Table
from airflow_txnlog.engine.features.deletion_vectors import (
    PORTABLE_MAGIC,
    DeletionVector,
    z85_decode,
    z85_encode,
)

GOLDEN = Path(__file__).parents[2] / "compat" / "golden"


def _bitmap(rows: list[int]) -> bytes:
    """A RoaringBitmapArray in the portable format (magic, then the 64-bit portable serialization)."""
    return struct.pack("<i", PORTABLE_MAGIC) + BitMap64(rows).serialize()


def test_uuid_path_as_the_protocol_example_says() -> None:
    # PROTOCOL.md "JSON Example 1": prefix "ab", UUID d2c639aa-8816-431a-aaf6-d3fe2512ff61
    dv = DeletionVector.from_wire(
        {"storageType": "u", "pathOrInlineDv": "ab^-aqEH.-t@S}K{vb[*k^", "offset": 4, "sizeInBytes": 40,
         "cardinality": 6}
    )  # fmt: skip
    assert dv.relative_path() == "ab/deletion_vector_d2c639aa-8816-431a-aaf6-d3fe2512ff61.bin"
    assert dv.unique_id == "uab^-aqEH.-t@S}K{vb[*k^@4"
    inline = DeletionVector.from_wire(
        {"storageType": "i", "pathOrInlineDv": "x", "sizeInBytes": 1, "cardinality": 0}
    )
    assert inline.unique_id == "ix" and inline.relative_path() is None


@given(st.binary(max_size=64))
def test_z85_round_trip(data: bytes) -> None:
    assert z85_decode(z85_encode(data), len(data)) == data


def test_z85_rejects_bad_text() -> None:
    with pytest.raises(ValueError, match="multiple of 5"):
        z85_decode("abcd")
    with pytest.raises(ValueError, match="not a Z85 character"):
        z85_decode("abc~e")


def _dv_table(root: Path, dv_for: Any) -> tuple[Table, dict[str, Any]]:
    """A 10-row table, then a commit as another writer makes it: the protocol gains deletionVectors
    and the file is re-added with the DV `dv_for(root)` returns (remove of the old key, add of the new)."""
    t = Table.create(str(root), schema=pa.schema([("id", pa.int64())]))
    t.write(pa.table({"id": list(range(10))}))
    (add,) = t.snapshot().files()
    dv = dv_for(root)
    actions = [
        {"commitInfo": {"timestamp": 1, "operation": "DELETE"}},
        {"protocol": {"minReaderVersion": 3, "minWriterVersion": 7, "readerFeatures": ["deletionVectors"],
                      "writerFeatures": ["deletionVectors"]}},
        {"remove": {"path": add.path, "deletionTimestamp": 2, "dataChange": True, "size": add.size}},
        {"add": {**add.to_wire()["add"], "deletionVector": dv}},
    ]  # fmt: skip
    (root / "_delta_log" / f"{2:020d}.json").write_text("\n".join(json.dumps(a) for a in actions) + "\n")
    return Table.open(str(root)), dv


def _on_disk(rows: list[int], *, prefix: str = "", corrupt: str = "") -> Any:
    def make(root: Path) -> dict[str, Any]:
        data = _bitmap(rows)
        u = uuid.uuid4()
        folder = root / prefix if prefix else root
        folder.mkdir(exist_ok=True)
        crc = zlib.crc32(data) ^ (1 if corrupt == "checksum" else 0)
        blob = b"\x01" + struct.pack(">i", len(data)) + data + struct.pack(">I", crc)
        (folder / f"deletion_vector_{u}.bin").write_bytes(blob)
        card = len(rows) + (1 if corrupt == "cardinality" else 0)
        return {"storageType": "u", "pathOrInlineDv": prefix + z85_encode(u.bytes), "offset": 1,
                "sizeInBytes": len(data), "cardinality": card}  # fmt: skip

    return make


def test_inline_dv_drops_its_rows(tmp_path: Path) -> None:
    data = _bitmap([0, 3, 9])
    inline = {
        "storageType": "i",
        "pathOrInlineDv": z85_encode(data),
        "sizeInBytes": len(data),
        "cardinality": 3,
    }
    t, _ = _dv_table(tmp_path / "t", lambda root: inline)
    snap = t.snapshot()
    assert sorted(snap.to_arrow().column("id").to_pylist()) == [1, 2, 4, 5, 6, 7, 8]
    (f,) = snap.files()
    assert snap.deleted_rows(f).tolist() == [0, 3, 9]
    assert snap.to_arrow(filter="id > 5").column("id").to_pylist() == [6, 7, 8]
    assert t.snapshot(version=1).to_arrow().num_rows == 10  # time travel before the DV


def test_on_disk_dv_with_random_prefix(tmp_path: Path) -> None:
    t, dv = _dv_table(tmp_path / "t", _on_disk([1, 2, 5], prefix="ab"))
    snap = t.snapshot()
    assert sorted(snap.to_arrow().column("id").to_pylist()) == [0, 3, 4, 6, 7, 8, 9]
    assert snap.file_paths() == [f.path for f in snap.files()]  # paths, not reconciliation keys
    assert snap.files()[0].deletion_vector == dv


@pytest.mark.parametrize(
    ("corrupt", "match"),
    [("checksum", "checksum mismatch"), ("cardinality", "holds 3 rows, cardinality says 4")],
)
def test_corrupt_dv_is_a_clear_error(tmp_path: Path, corrupt: str, match: str) -> None:
    t, _ = _dv_table(tmp_path / "t", _on_disk([1, 2, 5], corrupt=corrupt))
    with pytest.raises(LogCorruptedError, match=match) as info:
        t.snapshot().to_arrow()
    assert "data file" in str(info.value)


def test_missing_dv_file_is_a_clear_error(tmp_path: Path) -> None:
    t, _ = _dv_table(tmp_path / "t", _on_disk([4]))
    for f in (tmp_path / "t").glob("deletion_vector_*.bin"):
        f.unlink()
    with pytest.raises(LogCorruptedError, match=r"deletion vector file \S+ is missing"):
        t.snapshot().to_arrow()


def test_dv_past_the_end_of_the_file_is_a_clear_error(tmp_path: Path) -> None:
    t, _ = _dv_table(tmp_path / "t", _on_disk([3, 10]))
    with pytest.raises(LogCorruptedError, match="deletes row 10, but the file has 10 rows"):
        t.snapshot().to_arrow()


def test_reference_table_with_same_path_different_dv_keys(tmp_path: Path) -> None:
    # Kernel LogReplaySuite: one live add whose DV has cardinality 3; the file holds 50 rows
    snap = Table.open(str(GOLDEN / "log-replay-dv-key-cases")).snapshot()
    (f,) = snap.files()
    assert f.deletion_vector is not None and f.deletion_vector["cardinality"] == 3
    assert f.num_records == 50
    ids = snap.to_arrow().column("id").to_pylist()
    assert len(ids) == 47 and len(set(ids)) == 47
    assert len(snap.deleted_rows(f)) == 3


def test_reference_dv_table_time_travel(tmp_path: Path) -> None:
    # GT dv-partitioned-with-checkpoint: 50 rows at version 0, then DELETE col1 = 2n for n in 0..14
    root = tmp_path / "t"
    shutil.copytree(GOLDEN / "dv-partitioned-with-checkpoint", root)
    t = Table.open(str(root))
    for v in (0, 5, 15):
        deleted = {2 * n for n in range(v)}
        got = sorted(t.snapshot(version=v).to_arrow().column("col1").to_pylist())
        assert got == [x for x in range(50) if x not in deleted], v
