"""SQL that means what Spark means (issue 39): generated predicates and scalar expressions over rows
of edge values, evaluated by local Spark 4 (ANSI on, session time zone UTC) and by the engine through
its public paths, must agree.

For each predicate: the rows `Snapshot.to_arrow(filter=)` returns are exactly the rows Spark's
`filter` keeps (as a multiset of ids); `Snapshot.files(filter=)` keeps every file holding such a row;
and the engine's evaluator (the one CHECK constraints use) gives Spark's TRUE / FALSE / NULL per row.
For each scalar expression: the evaluator gives Spark's values (floats bit for bit, NaN = NaN; decimals
and timestamps exactly) and Spark's type, or raises InvalidArgumentError where Spark raises (ANSI);
where the rows hold a value that makes Spark raise, the "plain" rows (moderate values) are compared
too. A sample also goes through generated columns (`Table.create(generated_columns=)`, a write
without them, a read). The engine may refuse SQL where it is declared (PredicateError /
UnsupportedExpressionError): counted as `refused`, at most 10% of the predicates. Everything else is
a disagreement; all are collected, then the test fails listing the first ones (and the shortest case
of each kind).

A fixed sample (hypothesis, seeded) runs in CI; `TXNLOG_SQL_CASES=5000` runs more and prints the
counts per class and category (`TXNLOG_SQL_SEED=<int>` draws another sample):

    TXNLOG_SQL_CASES=5000 .venv/bin/pytest tests/sql/test_conformance_spark.py
"""

from __future__ import annotations

import os
import struct
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pyarrow as pa
import pytest

from airflow_txnlog.engine import InvalidArgumentError, PredicateError
from tests.sql.conformance import (
    AGREE,
    DISAGREE,
    REFUSED,
    Case,
    EngineAnswer,
    EngineTable,
    Evaluated,
    Outcome,
    Raised,
    RowSet,
    SparkOracle,
    SparkValues,
    classify_filter,
    classify_generated,
    classify_pruning,
    classify_values,
    disagreement_report,
    engine_compile,
    engine_evaluate,
    expression_cases,
    generated_type,
    predicate_cases,
    quiet_pyspark_errors,
    random_row,
    row_set,
    run_generated,
    sample,
    summary,
    worst,
)

pytestmark = [pytest.mark.spark, pytest.mark.slow]

CI_CASES = 700  # predicates and expressions together, in CI
FILTER_SHARE = 0.55
CASES_PER_ROW_SET = 1500
RANDOM_ROWS, PLAIN_ROWS = 30, 18
CI_GENERATED = 40  # expressions per row set also checked as generated columns in CI (all otherwise)
GENERATED_BATCH = 12  # generated columns per table
ORACLE_SELF_CHECK = 6  # predicates per row set whose batched answer is checked against df.filter
SPARK_CONF = {
    "spark.sql.ansi.enabled": "true",
    "spark.sql.session.timeZone": "UTC",
    # evaluate with generated code over the rows, as a scan of a table is, not folded at planning
    "spark.sql.optimizer.excludedRules": "org.apache.spark.sql.catalyst.optimizer.ConvertToLocalRelation",
    # each column computes its own subexpressions: an ANSI error's query context then names the
    # column that raises it (SparkOracle sets that column aside and runs the others again)
    "spark.sql.subexpressionElimination.enabled": "false",
}


@pytest.fixture
def spark_conf(spark: Any) -> Any:
    before = {key: spark.conf.get(key, None) for key in SPARK_CONF}
    for key, value in SPARK_CONF.items():
        spark.conf.set(key, value)
    restore_logging = quiet_pyspark_errors(spark)
    yield spark
    restore_logging()
    for key, value in before.items():
        if value is None:
            spark.conf.unset(key)
        else:
            spark.conf.set(key, value)


class Run:
    """The checks of one row set: its engine table, its Spark DataFrame, the outcomes."""

    def __init__(self, spark: Any, root: Path, rows: RowSet, all_generated: bool) -> None:
        self.spark, self.root, self.rows = spark, root, rows
        self.oracle = SparkOracle(spark, rows.table)
        self.all_ids: list[int] = rows.table["id"].to_pylist()
        self.outcomes: list[Outcome] = []
        self.table: EngineTable | None = None
        try:
            self.table = EngineTable(root / "table", rows)
        except Exception as exc:  # no filter can be checked then; the expressions still are
            case = Case("filter", f"(the rows of {root.name}, partitioned by {rows.partition_by})", "writing")
            why = f"the rows cannot be written ({type(exc).__name__})"
            self.outcomes.append(Outcome("filter", case, DISAGREE, why, str(exc)[:300]))
        self.oracle_mismatches: list[str] = []
        self.all_generated = all_generated
        self.jobs_elsewhere = 0
        self.answers: dict[str, SparkValues] = {}
        self.tables = 0

    def record(self, case: Case, check: str, fn: Any, *args: Any) -> None:
        """`fn(*args)`'s outcome; a failure of the check itself is recorded, never raised, so that it
        cannot hide the other cases."""
        try:
            self.outcomes.append(fn(*args))
        except Exception as exc:
            self.outcomes.append(
                Outcome(check, case, DISAGREE, f"the check failed ({type(exc).__name__})", str(exc)[:300])
            )

    # ------------------------------------------------------------------ predicates
    def predicates(self, cases: list[Case]) -> None:
        answers = self.oracle.select([c.text for c in cases])
        self_checked = 0
        for case in cases:
            answer = answers[case.text]
            ids, error = self._selected(answer), None
            if ids is None:  # the batched select raised (or is not BOOLEAN): Spark's filter decides
                ids, error = self.oracle.filter_ids(case.text)
            elif self_checked < ORACLE_SELF_CHECK:
                self_checked += 1
                direct, _ = self.oracle.filter_ids(case.text)
                if direct != ids:
                    self.oracle_mismatches.append(f"{case.text}: select {ids}, filter {direct}")
            if self.table is not None:
                self.record(case, "filter", self._filter, case, self.table, ids, error)
                if ids is not None:
                    self.record(case, "prune", self._prune, case, self.table, ids)
            self.record(case, "check", self._values, "check", case, answer)

    @staticmethod
    def _selected(answer: SparkValues) -> list[int] | None:
        """The ids of the rows where the predicate's values are TRUE (positions in id order are
        the ids: a row set's ids are 0..n-1)."""
        if answer.values is None or not pa.types.is_boolean(answer.values.type):
            return None
        return [k for k, v in enumerate(answer.values.to_pylist()) if v is True]

    def _filter(self, case: Case, table: EngineTable, ids: list[int] | None, error: Any) -> Outcome:
        return classify_filter(case, self.rows, ids, error, table.filter(case.text))

    def _prune(self, case: Case, table: EngineTable, ids: list[int]) -> Outcome:
        return classify_pruning(case, table, ids, table.files(case.text))

    def _values(self, check: str, case: Case, answer: SparkValues) -> Outcome:
        try:
            compiled = engine_compile(case.text)
        except Exception as exc:
            return classify_values(check, case, self.rows, self.all_ids, answer, Evaluated(), exc)
        evaluated = engine_evaluate(compiled, self.rows.table)
        return classify_values(check, case, self.rows, self.all_ids, answer, evaluated, None)

    # ------------------------------------------------------------------ scalar expressions
    def expressions(self, cases: list[Case]) -> None:
        answers = self.oracle.select([c.text for c in cases])
        self.answers = answers
        raising = [c.text for c in cases if (a := answers[c.text].error) is not None and a.stage == "runtime"]
        plain = self.rows.rows(self.rows.plain_ids)
        plain_answers: dict[str, SparkValues] = {}
        if raising:
            plain_oracle = SparkOracle(self.spark, plain)
            plain_answers = plain_oracle.select(raising)
            self.jobs_elsewhere += plain_oracle.jobs
            self.oracle_mismatches += plain_oracle.inconsistencies
        for case in cases:
            plain_answer = plain_answers.get(case.text)
            self.record(case, "expr", self._expression, case, answers[case.text], plain_answer, plain)
        chosen = cases if self.all_generated else cases[:CI_GENERATED]
        self.generated(chosen)

    def _expression(
        self, case: Case, answer: SparkValues, plain_answer: SparkValues | None, plain: pa.Table
    ) -> Outcome:
        try:
            compiled = engine_compile(case.text)
        except Exception as exc:
            return classify_values("expr", case, self.rows, self.all_ids, answer, Evaluated(), exc)
        outcome = classify_values(
            "expr", case, self.rows, self.all_ids, answer, engine_evaluate(compiled, self.rows.table), None
        )
        if outcome.verdict != AGREE or plain_answer is None:
            return outcome
        on_plain = classify_values(
            "expr", case, self.rows, self.rows.plain_ids, plain_answer, engine_evaluate(compiled, plain), None
        )
        if on_plain.verdict == DISAGREE:
            on_plain.why += " (plain rows)"
        return worst(outcome, on_plain)

    def generated(self, cases: list[Case]) -> None:
        """Each expression as a generated column of Spark's result type: batched for those the
        evaluator compiles and Spark computes; one table each for those the evaluator refuses (the
        refusal must come at create, not at the write) and those Spark raises on (the write must)."""
        batch: list[tuple[Case, pa.DataType]] = []
        for case in cases:
            answer = self.answers[case.text]
            if answer.error is not None and answer.error.stage == "analysis":
                continue
            t = generated_type(
                answer.values.type if answer.values is not None else self.oracle.arrow_type(case.text)
            )
            if t is None:
                continue
            try:
                engine_compile(case.text)
            except Exception:
                self._generated([(case, t)])
                continue
            if answer.error is not None:
                self._generated([(case, t)])
                continue
            batch.append((case, t))
            if len(batch) == GENERATED_BATCH:
                self._generated(batch)
                batch = []
        self._generated(batch)

    def _generated(self, exprs: list[tuple[Case, pa.DataType]]) -> None:
        if not exprs:
            return
        self.tables += 1
        run = run_generated(
            self.root / f"generated-{self.tables}", self.rows.table, [(c.text, t) for c, t in exprs]
        )
        if run.error is not None and len(exprs) > 1:  # which one? each alone
            for one in exprs:
                self._generated([one])
            return
        for k, (case, _) in enumerate(exprs):
            answer = self.answers[case.text]
            self.record(case, "generated", classify_generated, case, self.rows, answer, run, f"g{k}")


def test_the_engine_reads_sql_as_spark_does(spark_conf: Any, tmp_path: Path, capsys: Any) -> None:
    started = time.monotonic()
    wanted = os.environ.get("TXNLOG_SQL_CASES")
    n = int(wanted) if wanted else CI_CASES
    n_filter = round(n * FILTER_SHARE)
    predicates = sample(predicate_cases(), n_filter, label="predicates", unique=True)
    expressions = sample(expression_cases(), n - n_filter, label="expressions", unique=True)
    n_sets = max(2, -(-n // CASES_PER_ROW_SET))
    randoms = sample(random_row(), RANDOM_ROWS * n_sets, label="rows")
    plains = sample(random_row(plain=True), PLAIN_ROWS * n_sets, label="plain rows")

    outcomes: list[Outcome] = []
    mismatches: list[str] = []
    jobs = 0
    for k in range(n_sets):
        rows = row_set(
            randoms[k * RANDOM_ROWS : (k + 1) * RANDOM_ROWS], plains[k * PLAIN_ROWS : (k + 1) * PLAIN_ROWS], k
        )
        run = Run(spark_conf, tmp_path / f"set-{k}", rows, all_generated=wanted is not None)
        mine = expressions[k::n_sets]
        run.predicates(predicates[k::n_sets])
        run.expressions(mine)
        outcomes += run.outcomes
        mismatches += run.oracle_mismatches + run.oracle.inconsistencies
        jobs += run.oracle.jobs + run.jobs_elsewhere

    report = summary(outcomes, len(predicates) + len(expressions), time.monotonic() - started, jobs)
    if wanted:
        with capsys.disabled():
            print("\n" + report)
    else:
        print(report)  # shown by pytest when the test fails

    problems = []
    if mismatches:  # the oracle itself: batching must not change Spark's answers
        problems.append(f"the batched Spark answers differ from Spark's own: {mismatches[:5]}")
    if any(o.verdict == DISAGREE for o in outcomes):
        problems.append(disagreement_report(outcomes))
    filters = [o for o in outcomes if o.check == "filter"]
    refused = sum(o.verdict == REFUSED for o in filters)
    if refused > 0.1 * len(filters):
        problems.append(f"{refused} of {len(filters)} predicates refused (more than 10%)")
    assert not problems, "\n\n".join(problems)


def test_the_classification_tells_each_disagreement() -> None:
    """The verdicts the conformance test asserts on can be DISAGREE: wrong rows, a missing raise,
    a pruning loss, -0.0 for 0.0, a wrong type; and agree where only NaN's bits or a string's Arrow
    width differ, or on a date past year 9999 that both give."""
    rows = row_set([], [], 0)
    case = Case("filter", "d > 1.0", "cmp double vs decimal")
    assert classify_filter(case, rows, [1, 2], None, EngineAnswer(ids=[2, 1])).verdict == AGREE
    wrong = classify_filter(case, rows, [1, 2], None, EngineAnswer(ids=[1, 3]))
    assert (wrong.verdict, wrong.why) == (DISAGREE, "wrong rows")
    assert "Spark only: #2{d=" in wrong.detail and "engine only: #3{d=" in wrong.detail
    spark_error = Raised("runtime", "ArithmeticException", "[CAST_INVALID_INPUT] ...")
    missing = classify_filter(case, rows, None, spark_error, EngineAnswer(ids=[]))
    assert (missing.verdict, missing.why) == (DISAGREE, "missing raise")
    refused = EngineAnswer(error=Raised("filter", "PredicateError", "no"), exc=PredicateError("no"))
    assert classify_filter(case, rows, [1], None, refused).verdict == REFUSED

    files: Any = SimpleNamespace(ids_by_file={"a.parquet": {1, 2}, "b.parquet": {3}})
    assert classify_pruning(case, files, [1], EngineAnswer(paths={"a.parquet"})).verdict == AGREE
    lost = classify_pruning(case, files, [1, 3], EngineAnswer(paths={"a.parquet"}))
    assert (lost.verdict, lost.why) == (DISAGREE, "pruning loss")

    expr = Case("expr", "d * 0", "arith *")
    ids = [0, 1, 2]

    def verdict(spark: pa.Array, ours: pa.Array) -> tuple[str, str]:
        o = classify_values("expr", expr, rows, ids, SparkValues(spark), Evaluated(ours, ours.type), None)
        return o.verdict, o.why

    nans = pa.array([float("nan"), struct.unpack("<d", struct.pack("<Q", 0x7FF8000000000001))[0], None])
    assert verdict(pa.array([float("nan")] * 2 + [None]), nans) == (AGREE, "")
    assert verdict(pa.array([0.0, 1.0, None]), pa.array([-0.0, 1.0, None])) == (DISAGREE, "wrong value")
    int32, int64 = pa.array([1, 2, 3], pa.int32()), pa.array([1, 2, 3], pa.int64())
    assert verdict(int32, int64) == (DISAGREE, "wrong type")
    assert verdict(pa.array(["a", "b", None], pa.large_string()), pa.array(["a", "b", None])) == (AGREE, "")
    far = pa.array([3_000_000, 0, None], pa.int32()).cast(pa.date32())  # year 10183
    assert verdict(far, far) == (AGREE, "")
    assert verdict(far, pa.array([0, 0, None], pa.int32()).cast(pa.date32())) == (DISAGREE, "wrong value")
    raising = SparkValues(error=spark_error)
    values = pa.array([1, 2, 3])
    missing_raise = classify_values("expr", expr, rows, ids, raising, Evaluated(values, values.type), None)
    assert (missing_raise.verdict, missing_raise.why) == (DISAGREE, "missing raise")
    engine_raise = Evaluated(
        error=Raised("evaluate", "InvalidArgumentError", "x"), exc=InvalidArgumentError("x")
    )
    assert classify_values("expr", expr, rows, ids, raising, engine_raise, None).verdict == AGREE
    spurious = classify_values("expr", expr, rows, ids, SparkValues(values), engine_raise, None)
    assert (spurious.verdict, spurious.why) == (DISAGREE, "spurious raise")
