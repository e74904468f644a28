"""Spark's HASH(a, b, ...): Murmur3 (x86, 32 bits) of each argument in turn, the first seeded with
42 and each next one with the hash so far; a NULL argument leaves it unchanged; an INT result.

Per type, as Spark's Murmur3Hash: BOOLEAN as the int 1 / 0; TINYINT, SMALLINT, INT and DATE (its
days) as an int; BIGINT, TIMESTAMP and TIMESTAMP_NTZ (microseconds) as a long (low word, then high
word); FLOAT as its int bits and DOUBLE as its long bits, -0.0 as 0.0 and every NaN as Java's one
NaN; a DECIMAL of up to 18 digits as its unscaled long, a wider one as the bytes of its unscaled
BigInteger (two's complement, big-endian, shortest); STRING (UTF-8) and BINARY as bytes, with Spark's
legacy tail (each trailing byte mixed as a signed int). Other types (arrays, structs, maps) are
refused when the expression is compiled. The mixing functions are the checkpoint writer's
(engine.log.spark_hash).
"""

from __future__ import annotations

import decimal
from collections.abc import Callable
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from airflow_txnlog.engine.log.spark_hash import SPARK_HASH_SEED, fmix, hash_bytes, mix_h1, mix_k1
from airflow_txnlog.engine.sql.types import Refused, Term, Value, kind, spark_name

_KINDS = frozenset({"null", "bool", "int", "float", "decimal", "string", "binary", "date", "ts", "ntz"})


def spark_hash(node: Any, c: Any) -> Term:
    """HASH(args) (see the module docstring); sqlglot leaves it an anonymous function."""
    terms = [c.compile(e) for e in node.expressions]
    if not terms:
        raise Refused("HASH() without arguments (Spark requires one)")
    for t in terms:
        if kind(t.type) not in _KINDS:
            raise Refused(f"HASH() of a {spark_name(t.type)} value (only scalar types are hashed here)")
    fns = [t.fn for t in terms]
    return Term(lambda b: _hash([f(b) for f in fns]), pa.int32(), node, any(t.may_fail for t in terms))


def _hash(values: list[Value]) -> Value:
    """The hash of each row of `values` (arrays or scalars; a scalar if all are)."""
    arrays = [v for v in values if not isinstance(v, pa.Scalar)]
    n = len(arrays[0]) if arrays else 1
    seeds = np.full(n, SPARK_HASH_SEED, dtype=np.uint32)
    with np.errstate(over="ignore"):
        for v in values:
            a = pa.repeat(v, n) if isinstance(v, pa.Scalar) else v
            if kind(a.type) == "null" or a.null_count == n:
                continue
            hashed = _BY_KIND[kind(a.type)](a, seeds)
            seeds = np.where(pc.is_valid(a).to_numpy(zero_copy_only=False), hashed, seeds)
    out = pa.array(seeds.view(np.int32), pa.int32())
    return out if arrays else out[0]


def _hash_int(words: np.ndarray, seeds: np.ndarray) -> np.ndarray:
    return fmix(mix_h1(seeds, mix_k1(words.astype(np.int64).astype(np.uint32))), 4)


def _hash_long(longs: np.ndarray, seeds: np.ndarray) -> np.ndarray:
    words = longs.astype(np.int64).view(np.uint64)
    low, high = (words & 0xFFFFFFFF).astype(np.uint32), (words >> np.uint64(32)).astype(np.uint32)
    return fmix(mix_h1(mix_h1(seeds, mix_k1(low)), mix_k1(high)), 8)


def _numbers(a: pa.Array, t: pa.DataType) -> np.ndarray:
    return np.asarray(pc.fill_null(pc.cast(a, t), 0).to_numpy(zero_copy_only=False))


def _floats(a: pa.Array, seeds: np.ndarray) -> np.ndarray:
    """FLOAT as floatToIntBits, DOUBLE as doubleToLongBits; -0.0 as 0.0."""
    single = a.type == pa.float32()
    x = _numbers(a, a.type)
    bits = x.view(np.int32 if single else np.int64)
    nan = np.int32(0x7FC00000) if single else np.int64(0x7FF8000000000000)
    bits = np.where(np.isnan(x), nan, np.where(x == 0, 0, bits))
    return _hash_int(bits, seeds) if single else _hash_long(bits, seeds)


def _decimals(a: pa.Array, seeds: np.ndarray) -> np.ndarray:
    """A DECIMAL of up to 18 digits as its unscaled long, a wider one as its BigInteger's bytes."""
    exact = decimal.Context(prec=80)
    unscaled = [None if d is None else int(d.scaleb(a.type.scale, context=exact)) for d in a.to_pylist()]
    if a.type.precision <= 18:
        return _hash_long(np.array([u or 0 for u in unscaled], dtype=np.int64), seeds)
    texts = [None if u is None else u.to_bytes(_width(u), "big", signed=True) for u in unscaled]
    return hash_bytes(pa.array(texts, pa.binary()), seeds)


def _width(n: int) -> int:  # Java's BigInteger.toByteArray length: bitLength / 8 + 1
    return (n if n >= 0 else ~n).bit_length() // 8 + 1


_BY_KIND: dict[str, Callable[[pa.Array, np.ndarray], np.ndarray]] = {
    "bool": lambda a, s: _hash_int(_numbers(a, pa.int32()), s),
    "int": lambda a, s: (_hash_long if a.type == pa.int64() else _hash_int)(_numbers(a, a.type), s),
    "date": lambda a, s: _hash_int(_numbers(a.view(pa.int32()), pa.int32()), s),
    "ts": lambda a, s: _hash_long(_numbers(a.view(pa.int64()), pa.int64()), s),
    "ntz": lambda a, s: _hash_long(_numbers(a.view(pa.int64()), pa.int64()), s),
    "float": _floats,
    "decimal": _decimals,
    "string": hash_bytes,
    "binary": hash_bytes,
}
