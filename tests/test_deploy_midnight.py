"""The deployment check never spans a UTC midnight, where the daily and weekly example DAGs' schedules
turn and the scheduler's own run of the next interval would do the work the check's runs expect to do
(scripts/deploy/scenario.py). Its clock can be set (`TXNLOG_DEPLOY_CHECK_NOW`): these tests set it."""

from __future__ import annotations

import datetime as dt

import pytest

from scripts.deploy import scenario

UTC = dt.UTC


@pytest.mark.parametrize(
    ("at", "wait"),
    [
        (dt.datetime(2026, 11, 29, 23, 57, tzinfo=UTC), 3 * 60 + 30),  # midnight in 3 min: wait past it
        (dt.datetime(2026, 11, 29, 23, 50, 1, tzinfo=UTC), 10 * 60 - 1 + 30),  # just inside the budget
        (dt.datetime(2026, 11, 29, 23, 49, 59, tzinfo=UTC), 0),  # 10 min 1 s left: the scenario fits
        (dt.datetime(2026, 11, 29, 12, 0, tzinfo=UTC), 0),
        (dt.datetime(2026, 11, 30, 0, 0, 30, tzinfo=UTC), 0),  # just after: a whole day ahead
        (dt.datetime(2026, 11, 30, 0, 57, tzinfo=dt.timezone(dt.timedelta(hours=1))), 3 * 60 + 30),  # (UTC)
    ],
)
def test_a_scenario_that_would_span_a_utc_midnight_waits_until_after_it(at: dt.datetime, wait: float) -> None:
    assert scenario.clear_of_midnight(at) == pytest.approx(wait)
    if wait:  # after waiting, the scenario fits before the next midnight
        assert scenario.clear_of_midnight(at + dt.timedelta(seconds=wait)) == 0


def test_the_checks_clock_can_be_set(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TXNLOG_DEPLOY_CHECK_NOW", "2026-11-29T23:57:00+00:00")
    assert scenario.now() == dt.datetime(2026, 11, 29, 23, 57, tzinfo=UTC)
    assert scenario.clear_of_midnight(scenario.now()) == 210
    monkeypatch.delenv("TXNLOG_DEPLOY_CHECK_NOW")
    assert abs((scenario.now() - dt.datetime.now(UTC)).total_seconds()) < 5
