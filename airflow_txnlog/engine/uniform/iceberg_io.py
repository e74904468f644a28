"""pyiceberg's FileIO over the table's Storage: Iceberg's writers and readers see whole objects.

pyiceberg writes manifests and manifest lists through an `OutputFile` and reads them through an
`InputFile`. Here both go through the engine's `Storage` (local disk, S3, Azure, GCS alike): an
output stream gathers its bytes in memory and stores them as one object when closed (Iceberg's
files are small: a manifest of 50,000 entries is a few MB), an input is read whole. A location is
the table's location plus a key under it (`<table>/metadata/...`); any other location is refused,
so nothing is ever written outside the table.
"""

from __future__ import annotations

import io
from types import TracebackType

from pyiceberg.io import FileIO, InputFile, InputStream, OutputFile, OutputStream

from airflow_txnlog.engine.errors import InvalidArgumentError
from airflow_txnlog.engine.storage import Storage


class _Sink(io.BytesIO):
    """An output stream stored as one object on close."""

    def __init__(self, storage: Storage, key: str, sizes: dict[str, int]) -> None:
        super().__init__()
        self._storage, self._key, self._sizes = storage, key, sizes

    def close(self) -> None:
        if not self.closed:
            data = self.getvalue()
            self._storage.write(self._key, data)
            self._sizes[self._key] = len(data)
        super().close()


class _Input(InputFile):
    def __init__(self, location: str, storage: Storage, key: str) -> None:
        super().__init__(location)
        self._storage, self._key = storage, key
        self._data: bytes | None = None

    def _bytes(self) -> bytes:
        if self._data is None:
            self._data = self._storage.read(self._key)
        return self._data

    def __len__(self) -> int:
        return len(self._bytes())

    def exists(self) -> bool:
        return self._storage.exists(self._key)

    def open(self, seekable: bool = True) -> InputStream:
        return io.BytesIO(self._bytes())


class _Output(OutputFile):
    def __init__(self, location: str, storage: Storage, key: str, sizes: dict[str, int]) -> None:
        super().__init__(location)
        self._storage, self._key, self._sizes = storage, key, sizes

    def __len__(self) -> int:
        return self._sizes[self._key]

    def exists(self) -> bool:
        return self._storage.exists(self._key)

    def to_input_file(self) -> InputFile:
        return _Input(self.location, self._storage, self._key)

    def create(self, overwrite: bool = False) -> OutputStream:
        return _Stream(_Sink(self._storage, self._key, self._sizes))


class _Stream(OutputStream):
    def __init__(self, sink: _Sink) -> None:
        self._sink = sink

    def write(self, b: bytes) -> int:
        return self._sink.write(b)

    def tell(self) -> int:
        return self._sink.tell()

    def close(self) -> None:
        self._sink.close()

    def __enter__(self) -> OutputStream:
        return self

    def __exit__(
        self, exctype: type[BaseException] | None, excinst: BaseException | None, exctb: TracebackType | None
    ) -> None:
        self.close()


class StorageIO(FileIO):
    """Iceberg locations under `location` (the table's) as keys of `storage`; `written` holds the
    size of every object written, by key."""

    def __init__(self, storage: Storage, location: str) -> None:
        super().__init__()
        self.storage, self.location = storage, location.rstrip("/")
        self.written: dict[str, int] = {}

    def key(self, location: str) -> str:
        prefix = self.location + "/"
        if not location.startswith(prefix):
            raise InvalidArgumentError(f"Iceberg file {location!r} is not under the table {self.location!r}")
        return location[len(prefix) :]

    def new_input(self, location: str) -> InputFile:
        return _Input(location, self.storage, self.key(location))

    def new_output(self, location: str) -> OutputFile:
        return _Output(location, self.storage, self.key(location), self.written)

    def delete(self, location: str | InputFile | OutputFile) -> None:
        where = location if isinstance(location, str) else location.location
        self.storage.delete(self.key(where))
