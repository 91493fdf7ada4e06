"""Agreement with trec_eval 10.0 on its own test data, to 1e-9, per query and for 'all'.

Both engines are checked: production's Arrow engine, on every numeric line of trec_eval's
``-m all_trec`` output (all but ``runid`` and ``relstring``), and the SQL oracle
(``tests/support/sql_oracle.py``) on the measures built from the statistics it has. The
expected values are trec_eval's output at full double precision
(``../shared/conformance/trec_eval/full.*``).
"""

from __future__ import annotations

from contextlib import nullcontext
from dataclasses import replace
from pathlib import Path

import pytest
from support.sql_oracle import ENGINES, oracle_supports
from support.trec_eval_text import assert_same_lines, expected_lines, name_of, supported

from releval.config import QrelsSource, RunSource
from releval.core import columns as S
from releval.core.measures import parse_measure
from releval.evaluation.evaluate import evaluate
from releval.io.readers import read_qrels, read_run
from releval.io.trec_eval_format import query_values, trec_eval_lines

CASES = {
    # expected file: (qrels, run, relevance level, missing queries)
    "full.test.q": ("qrels.test", "results.test", 1, "zero"),
    "full.trunc.qc": ("qrels.test", "results.trunc", 1, "zero"),
    "full.rel_level.l2.q": ("qrels.rel_level", "results.test", 2, "zero"),
    "full.comment.q": ("qrels.comment.test", "results.comment.test", 1, "zero"),
}


def read_expected(path: Path) -> dict[tuple[str, str], float]:
    """{(trec measure name, qid or 'all'): value} of a trec_eval -q output file."""
    expected = {}
    for line in path.read_text().splitlines():
        name, qid, value = (part.strip() for part in line.split("\t"))
        try:
            expected[(name, qid)] = float(value)
        except ValueError:  # runid, relstring
            continue
    return expected

@pytest.fixture(scope="module", params=[(c, e) for c in sorted(CASES) for e in sorted(ENGINES)],
                ids=lambda p: f"{p[0]}-{p[1]}")
def case(request, spark, conformance_dir, production_codegen):
    # the production engine is checked with production's code generation; the SQL oracle
    # runs as the rest of the tests do (interpreted)
    expected_file, engine = request.param
    qrels_file, run_file, level, missing = CASES[expected_file]
    expected = read_expected(conformance_dir / expected_file)
    mapping = supported({name for name, _ in expected})
    if engine == "sql":
        mapping = {n: k for n, k in mapping.items() if oracle_supports(parse_measure(k))}
    run = read_run(spark, RunSource(path=str(conformance_dir / run_file), format="trec"))
    qrels = read_qrels(spark, QrelsSource(path=str(conformance_dir / qrels_file), format="trec"))
    from releval.core.measures import parse_measures

    with production_codegen() if engine == "arrow" else nullcontext():
        ev = evaluate(
            run.drop("run_id"), qrels,
            measures=parse_measures(sorted(set(mapping.values())), relevance_level=level),
            missing_queries=missing,
            run_stats=ENGINES[engine],
        )
        # computed once for the module's tests: the tables and the text output all read the
        # persisted wide table (without it each of them would run the whole evaluation again)
        queries = ev.queries.persist()
        ev = replace(ev, queries=queries)
        per_query = ev.per_query.toPandas()
        aggregate = ev.aggregate.toPandas()
    yield expected_file, expected, mapping, per_query, aggregate, ev
    queries.unpersist()


@pytest.mark.parametrize("expected_file", sorted(CASES))
def test_every_numeric_trec_eval_line_is_a_releval_measure(conformance_dir, expected_file):
    expected = read_expected(conformance_dir / expected_file)
    numeric = {trec_name for trec_name, _ in expected} - {"num_q"}
    assert sorted(numeric - set(supported(numeric))) == []
    assert len(numeric) == 97  # the 35 families with their cutoffs and recall points


def test_per_query_values_agree(case):
    name, expected, mapping, per_query, _, _ = case
    got = {(r[S.MEASURE_KEY], r[S.QUERY_ID]): r[S.VALUE] for _, r in per_query.iterrows()}
    mismatches = []
    compared = 0
    for (trec_name, qid), value in expected.items():
        if qid == "all" or trec_name not in mapping:
            continue
        compared += 1
        actual = got.get((mapping[trec_name], qid))
        if actual is None or abs(actual - value) > 1e-9:
            mismatches.append((trec_name, qid, value, actual))
    assert compared > 0
    assert not mismatches, f"{name}: {len(mismatches)} mismatches, first: {mismatches[:5]}"
    # and nothing extra: releval scores exactly the queries trec_eval scores
    expected_queries = {qid for (_, qid) in expected if qid != "all"}
    assert set(per_query[S.QUERY_ID]) == expected_queries


def test_all_line_agrees(case):
    name, expected, mapping, _, aggregate, _ = case
    means = aggregate[aggregate[S.AVERAGING].isin(["macro", "sum", "geometric"])]
    got = {r[S.MEASURE_KEY]: r[S.VALUE] for _, r in means.iterrows()}
    mismatches = [
        (trec_name, value, got.get(mapping[trec_name]))
        for (trec_name, qid), value in expected.items()
        if qid == "all" and trec_name in mapping
        and abs(got.get(mapping[trec_name], float("nan")) - value) > 1e-9
    ]
    assert not mismatches, f"{name}: {mismatches[:5]}"
    assert set(aggregate[S.NUM_QUERIES]) == {expected[("num_q", "all")]}


def test_trec_eval_text_output_matches_line_for_line(case, conformance_dir):
    name, _, mapping, _, _, ev = case
    lines = trec_eval_lines(ev.measures, query_values(ev.queries), ev.aggregate.collect())
    printed = {name_of(line) for line in lines}
    assert printed == {*mapping, "num_q"}  # no run partition here: no runid line
    # trec_eval's lines of those measures, in its order
    assert_same_lines(lines, expected_lines(conformance_dir / name, printed))
