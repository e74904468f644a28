from __future__ import annotations

import json
import subprocess
import sys


def test_engine_import_loads_no_airflow_pyspark_pandas_or_deltalake() -> None:
    code = (
        "import sys, json; import airflow_txnlog.engine as e; e.Table; "
        "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in "
        "('airflow', 'pyspark', 'pandas', 'deltalake', 'polars'))))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert json.loads(out.stdout) == []


def test_every_public_engine_name_loads_lazily_from_its_module() -> None:
    import airflow_txnlog.engine as engine  # noqa: PLC0415

    for name in engine.__all__:
        assert getattr(engine, name) is not None, name
