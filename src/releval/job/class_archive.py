"""The driver JVM's class archive, written once at install time (``make install``):
``python -m releval.job.class_archive DIR`` runs a small evaluation in a JVM of its own and
keeps the classes it loaded (:func:`releval.runtime.session.archive_classes`)."""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path

from pyspark.sql import SparkSession

from releval.config import Config, EvaluationSettings, OutputSettings, QrelsSource, RunSource
from releval.job import pipeline
from releval.runtime.session import archive_classes


def small_evaluation(spark: SparkSession) -> None:
    """TREC files in, Delta tables out and read back: the classes a small job loads."""
    work = Path(tempfile.mkdtemp(prefix="releval-classes-"))
    try:
        run, qrels = work / "run.trec", work / "qrels.trec"
        run.write_text("".join(f"q{q} Q0 d{d} {d + 1} {10 - d} archive\n"
                               for q in range(20) for d in range(10)))
        qrels.write_text("".join(f"q{q} 0 d{d} {d % 3}\n"
                                 for q in range(20) for d in range(0, 10, 2)))
        config = Config(
            run=RunSource(path=str(run), format="trec", partition_columns=("run_id",)),
            qrels=QrelsSource(path=str(qrels), format="trec"),
            evaluation=EvaluationSettings(measures=("P@5", "nDCG@10", "AP", "RR")),
            output=OutputSettings(per_query_path=str(work / "per_query"),
                                  aggregate_path=str(work / "aggregate"),
                                  quarantine_path=str(work / "quarantine")),
        )
        pipeline.run(spark, config)
        pipeline.read_per_query(spark, config).count()
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        print("usage: python -m releval.job.class_archive JARS_DIR", file=sys.stderr)
        sys.exit(2)
    print(f"wrote {archive_classes(sys.argv[1], small_evaluation)}")
