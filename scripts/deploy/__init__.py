"""The deployment check's pieces (driver: scripts/deploy_check.py; docs/deployment.md).

`stack` owns the processes and the temporary folder, `api` talks to the REST API, `scenario` holds
the expectations table and drives the runs, `checks` reads the outcome back and judges it. Only
`checks` and `scenario` import the engine (lazily), never airflow: the driver is a client of the
deployment, as an operator's script would be.
"""

from __future__ import annotations
