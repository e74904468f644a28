"""A minimal client of Airflow 3's public REST API (`/api/v2`), standard library only.

The check authenticates the way a script does against a deployment using the simple auth manager
with `simple_auth_manager_all_admins` (GET /auth/token); every other call carries the bearer token.
Reads return parsed JSON; list endpoints are paged through so no result is silently cut off.
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.parse
import urllib.request
from typing import Any

TERMINAL_RUN_STATES = ("success", "failed")


class ApiError(RuntimeError):
    """A REST call answered with an error status (the body is in the message)."""


class AirflowApi:
    def __init__(self, base_url: str) -> None:
        self.base_url = base_url.rstrip("/")
        self._token: str | None = None

    def _call(self, method: str, path: str, body: Any = None, auth: bool = True) -> Any:
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(f"{self.base_url}{path}", data=data, method=method)
        req.add_header("Content-Type", "application/json")
        if auth:
            req.add_header("Authorization", f"Bearer {self.token()}")
        try:
            with urllib.request.urlopen(req, timeout=30) as resp:
                raw = resp.read()
        except urllib.error.HTTPError as exc:
            raise ApiError(f"{method} {path}: HTTP {exc.code}: {exc.read()[:500]!r}") from exc
        return json.loads(raw) if raw else None

    def token(self) -> str:
        if self._token is None:
            self._token = str(self._call("GET", "/auth/token", auth=False)["access_token"])
        return self._token

    def get(self, path: str, **params: Any) -> Any:
        query = urllib.parse.urlencode({k: v for k, v in params.items() if v is not None}, doseq=True)
        return self._call("GET", f"/api/v2{path}" + (f"?{query}" if query else ""))

    def get_raw(self, path: str) -> Any:
        """A GET outside /api/v2 (e.g. the Tables view's /txnlog/api/...)."""
        return self._call("GET", path)

    def get_all(self, path: str, key: str, **params: Any) -> list[dict[str, Any]]:
        """Every entry of a paged list endpoint."""
        out: list[dict[str, Any]] = []
        while True:
            page = self.get(path, limit=100, offset=len(out), **params)
            out.extend(page[key])
            if not page[key] or len(out) >= page["total_entries"]:
                return out

    def post(self, path: str, body: Any) -> Any:
        return self._call("POST", f"/api/v2{path}", body)

    def patch(self, path: str, body: Any) -> Any:
        return self._call("PATCH", f"/api/v2{path}", body)

    def healthy(self) -> bool:
        """True once the API answers and every component reports healthy."""
        try:
            health = self._call("GET", "/api/v2/monitor/health", auth=False)
        except (OSError, ApiError):
            return False
        parts = ("metadatabase", "scheduler", "triggerer", "dag_processor")
        return all((health.get(p) or {}).get("status") == "healthy" for p in parts)

    # -------------------------------------------------------------- DAGs, runs, tasks
    def dags(self) -> dict[str, dict[str, Any]]:
        return {d["dag_id"]: d for d in self.get_all("/dags", "dags")}

    def unpause(self, dag_id: str) -> None:
        self.patch(f"/dags/{dag_id}", {"is_paused": False})

    def trigger(self, dag_id: str, *, logical_date: str | None, conf: dict[str, Any] | None = None) -> str:
        body: dict[str, Any] = {"logical_date": logical_date, "conf": conf or {}}
        return str(self.post(f"/dags/{dag_id}/dagRuns", body)["dag_run_id"])

    def runs(self, dag_id: str) -> list[dict[str, Any]]:
        return self.get_all(f"/dags/{dag_id}/dagRuns", "dag_runs", order_by="run_after")

    def run(self, dag_id: str, run_id: str) -> dict[str, Any]:
        return dict(self.get(f"/dags/{dag_id}/dagRuns/{_q(run_id)}"))

    def task_instances(self, dag_id: str, run_id: str) -> dict[str, dict[str, Any]]:
        tis = self.get_all(f"/dags/{dag_id}/dagRuns/{_q(run_id)}/taskInstances", "task_instances")
        return {ti["task_id"]: ti for ti in tis}

    def tasks(self, dag_id: str) -> dict[str, dict[str, Any]]:
        return {t["task_id"]: t for t in self.get(f"/dags/{dag_id}/tasks")["tasks"]}

    def xcom(self, dag_id: str, run_id: str, task_id: str, map_index: int | None = None) -> Any:
        """A task's return value (of one mapped instance with `map_index`); None when there is none."""
        path = f"/dags/{dag_id}/dagRuns/{_q(run_id)}/taskInstances/{task_id}/xcomEntries/return_value"
        try:
            return self.get(path, deserialize=True, stringify=False, map_index=map_index)["value"]
        except ApiError:
            return None

    def task_log(self, dag_id: str, run_id: str, task_id: str, try_number: int) -> str:
        path = f"/dags/{dag_id}/dagRuns/{_q(run_id)}/taskInstances/{task_id}/logs/{try_number}"
        try:
            content = self.get(path, full_content=True).get("content") or []
        except ApiError as exc:
            return f"(log unavailable: {exc})"
        lines = [c.get("event", str(c)) if isinstance(c, dict) else str(c) for c in content]
        return "\n".join(lines)

    def wait_run(self, dag_id: str, run_id: str, timeout: float, poll: float = 2) -> dict[str, Any]:
        """The run once it is in a final state (TimeoutError with its last state otherwise)."""
        deadline = time.monotonic() + timeout
        while True:
            run = self.run(dag_id, run_id)
            if run["state"] in TERMINAL_RUN_STATES:
                return run
            if time.monotonic() > deadline:
                raise TimeoutError(f"{dag_id} {run_id} still {run['state']} after {timeout:.0f}s")
            time.sleep(poll)

    # -------------------------------------------------------------- assets
    def asset_id(self, uri: str) -> int | None:
        for asset in self.get_all("/assets", "assets", uri_pattern=uri):
            if asset["uri"] == uri:
                return int(asset["id"])
        return None

    def asset_events(self, asset_id: int) -> list[dict[str, Any]]:
        return self.get_all("/assets/events", "asset_events", asset_id=asset_id, order_by="timestamp")


def _q(value: str) -> str:
    return urllib.parse.quote(value, safe="")
