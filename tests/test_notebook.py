"""A notebook run as Jupyter runs it (``jupyter nbconvert --execute``, a Python kernel in a
process of its own, a default SparkSession in it): the cell that ends in ``result`` shows a
short summary with the macro means, and ``dir(releval)`` holds the public API."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

pytestmark = pytest.mark.slow  # a kernel process and the JVM of its session

CELLS = [
    """import releval
from pyspark.sql import SparkSession
spark = SparkSession.builder.master("local[2]").getOrCreate()
spark.sparkContext.setLogLevel("ERROR")""",
    """run = spark.createDataFrame(
    [(s, f"q{q}", f"d{d}", float(10 - d + i * (d % 2)))
     for i, s in enumerate(["bm25", "dense"]) for q in range(3) for d in range(6)],
    "system string, query_id string, doc_id string, score double")
qrels = spark.createDataFrame([(f"q{q}", f"d{d}", 1) for q in range(3) for d in (1, 4)],
                              "query_id string, doc_id string, relevance int")
result = releval.evaluate(run, qrels, measures=["P@1", "RR", "nDCG@10"],
                          partition_by=["system"])
result""",
    """[n for n in ("evaluate", "compare", "measures") if n in dir(releval)]""",
]


def test_a_cell_ending_in_result_shows_a_short_summary(tmp_path: Path):
    path = tmp_path / "evaluate.ipynb"
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in CELLS])
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                       "language": "python"}
    nbformat.write(notebook, path)
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable,
           "PYSPARK_DRIVER_PYTHON": sys.executable}
    subprocess.run(
        [sys.executable, "-m", "jupyter", "nbconvert", "--to", "notebook", "--execute",
         "--ExecutePreprocessor.timeout=600", "--output", "executed.ipynb", str(path)],
        check=True, env=env, cwd=tmp_path, capture_output=True, text=True, timeout=900)
    cells = json.loads((tmp_path / "executed.ipynb").read_text())["cells"]
    shown = [o for o in cells[1]["outputs"] if o["output_type"] == "execute_result"]
    assert len(shown) == 1
    text = "".join(shown[0]["data"]["text/plain"])
    assert len(text.splitlines()) <= 40, text
    # bm25 ranks d0 (not relevant) first, dense ties d0 and d1 and puts d1 first (doc id
    # descending): P@1 0 and 1, RR 1/2 and 1 in every query
    rows = {line.split()[0]: line.split() for line in text.splitlines() if line}
    assert rows["measure_key"] == ["measure_key", "bm25", "dense"]
    assert rows["P@1"][1] == "0.0000" and rows["P@1"][4] == "1.0000"
    assert rows["RR"][1] == "0.5000" and rows["RR"][4] == "1.0000"
    html = "".join(shown[0]["data"]["text/html"])
    assert "<td>P@1</td>" in html and "macro means" in html
    names = [o for o in cells[2]["outputs"] if o["output_type"] == "execute_result"]
    assert "".join(names[0]["data"]["text/plain"]) == "['evaluate', 'compare', 'measures']"
