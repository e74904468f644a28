"""Thread pools kept for the life of a process, and forgotten in a forked child.

The engine's bulk reads run work on a few threads (`checkpoint_columns.ordered_map`, the JSON stats
parse a file table starts early). Starting those threads per call costs more than the thread: a
fresh thread's first allocations come from a new allocator heap, so they fault in (and the kernel
zeroes) fresh pages, ~20 ms of a 100k-file load. So `shared(name, workers)` hands out one
`ThreadPoolExecutor` per (name, workers) for the process.

Invariant: a pool is only ever used in the process that started its threads. A forked child
(Airflow's task runners and dag processor fork) inherits the parent's executor objects but not their
threads; an inherited executor that believes it has idle threads queues work that nothing runs, and
the child hangs. So the registry is emptied in the child at fork (`os.register_at_fork`), and the
child's first call starts pools of its own.

Pools are shared by every caller of the same name: a task must never wait for another task of the
pool it runs on (with all threads waiting, nothing would run). Each caller documents which pools its
tasks wait for; those must be different names.
"""

from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor

_POOLS: dict[tuple[str, int], ThreadPoolExecutor] = {}
_LOCK = threading.Lock()


def shared(name: str, workers: int) -> ThreadPoolExecutor:
    """The process's pool of `workers` threads named `name` (threads `name_0`, ...)."""
    with _LOCK:
        pool = _POOLS.get((name, workers))
        if pool is None:
            pool = _POOLS[(name, workers)] = ThreadPoolExecutor(workers, thread_name_prefix=name)
        return pool


def side_reads() -> ThreadPoolExecutor:
    """The pool for the commits opening a table reads beside its checkpoint, and for the live mask
    a checkpoint write computes while its first batch is read: its tasks read, parse or compute,
    and wait for nothing."""
    return shared("txnlog-open", 4)


def part_reads() -> ThreadPoolExecutor:
    """The pool for a checkpoint part's small actions, read beside its keys: apart from
    `side_reads`, so that a part's short read never queues behind other opens' long commit tails.
    Its tasks read, and wait for nothing."""
    return shared("txnlog-part", 4)


def object_puts() -> ThreadPoolExecutor:
    """The pool for the puts of a checkpoint's parts or sidecars to an object store, issued side by
    side (`checkpoint_parts`): each task puts one object, and waits for nothing."""
    return shared("txnlog-put", 8)


def early_parse() -> ThreadPoolExecutor:
    """The pool for the task that reads a checkpoint's JSON stats batch by batch for `ordered_map`'s
    workers to parse (`add_actions.file_table`): its tasks wait only for "txnlog-batches" tasks,
    which wait for nothing."""
    return shared("txnlog-stats", 4)


def stats_decodes() -> ThreadPoolExecutor:
    """The pool for the pieces of a large stats parse (`stats_struct`), decoded beside the piece the
    caller decodes: its tasks decode, and wait for nothing."""
    return shared("txnlog-decode", 2)


def _forget_in_child() -> None:
    """After a fork, in the child: the inherited pools have no threads; drop them (never shut down:
    that would wait for threads that do not exist here)."""
    _POOLS.clear()
    _LOCK.release()


# The lock is held across the fork, so no other thread holds it at that moment (the child's copy
# would stay locked) and the registry is not half-updated.
os.register_at_fork(before=_LOCK.acquire, after_in_parent=_LOCK.release, after_in_child=_forget_in_child)
