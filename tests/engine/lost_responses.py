"""A store whose exclusive creates land but answer "already exists": a client retry refused on our
own object (gcsfs and botocore retry a create whose response was lost)."""

from __future__ import annotations

from typing import Any

from airflow_txnlog.engine.log.log_paths import commit_name


def lose_create_responses(
    storage: Any, *, read_back_differs: int | None = None, read_fails: int | None = None
) -> list[str]:
    """Patch `storage` (a test's own handle) so every `put_if_absent` lands, then raises
    FileExistsError. With `read_back_differs=v` the first read of commit v sees other bytes (the
    read-back only: later reads are true); with `read_fails=v` every read of commit v fails. Returns
    the commit keys created, in order."""
    real_put, real_read = storage.put_if_absent, storage.read
    created: list[str] = []
    differed: list[str] = []

    def put(key: str, data: bytes) -> None:
        real_put(key, data)
        if key.endswith(".json"):  # (a commit; the version checksum beside it is not counted)
            created.append(key)
        raise FileExistsError(key)

    def read(key: str) -> bytes:
        if read_fails is not None and key.endswith(commit_name(read_fails)):
            raise ConnectionResetError("the network blip that caused the retry")
        if read_back_differs is not None and key.endswith(commit_name(read_back_differs)) and not differed:
            differed.append(key)
            return b"{}"
        return real_read(key)  # type: ignore[no-any-return]

    storage.put_if_absent, storage.read = put, read
    return created
