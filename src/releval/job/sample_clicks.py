"""The sample's interactions log: clicks simulated from the sample's known relevance and a
known position bias, by the position-based model (PBM); docs/clicks.md.

Each day, each judged query is searched a Poisson number of times by its traffic segment
(:data:`SEARCHES`); each search is served by one of the sample's systems at random (an A/B/C
test: the ``system`` column) and shows the top :data:`SHOWN` of its ranking of the day. A
shown document is clicked when examined and attractive, independently:
``P(click at k on d) = examination(k) * attractiveness(grade(d))``, with
``examination(k) = k ** -EXAMINATION_POWER`` (:func:`true_examination`) and
:data:`ATTRACTIVENESS` by the reference (``v1``) grade (unjudged: grade 0). A click's dwell
is exponential with the mean :data:`DWELL` of its grade. The systems rank a query's
documents differently, so a (query, document) is shown at several positions.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

#: The shown documents of each search (the first result page).
SHOWN = 10
#: examination(k) = k ** -EXAMINATION_POWER: the true position bias of the sample's log.
EXAMINATION_POWER = 0.8
#: P(a user finds a document attractive), by its reference grade (unjudged: grade 0).
ATTRACTIVENESS = {0: 0.05, 1: 0.2, 2: 0.5, 3: 0.8}
#: The mean dwell (seconds) of a click, by grade: long on a relevant document.
DWELL = {0: 8.0, 1: 20.0, 2: 45.0, 3: 90.0}
#: The mean searches per day of a judged query of each traffic segment (Poisson).
SEARCHES = {"head": 60, "torso": 15, "tail": 3}
#: The interactions log's columns, log-style (``item_id`` for documents, as the search log).
COLUMNS = ["search_id", "query_id", "item_id", "position", "clicked", "dwell", "system", "date"]


def true_examination(positions: int = SHOWN) -> np.ndarray:
    """The sample's true examination probability at positions 1..``positions``.

    Example:
        >>> [round(float(x), 3) for x in true_examination(3)]
        [1.0, 0.574, 0.415]
    """
    return np.arange(1, positions + 1, dtype=float) ** -EXAMINATION_POWER


def generate_interactions(run: pd.DataFrame, qrels: pd.DataFrame, queries: pd.DataFrame,
                          *, seed: int) -> pd.DataFrame:
    """The interactions log of the sample (columns :data:`COLUMNS`), one row per impression.

    Args:
        run: the sample's search log (:func:`releval.job.sample.generate`).
        qrels: the reference qrels (``query_id``, ``doc_id``, ``relevance``).
        queries: the queries input (``query_id``, ``segment``).
        seed: the generator's seed (same seed, same log).
    """
    rng = np.random.default_rng(seed)
    top = run.loc[run["position"] <= SHOWN, ["system", "date", "query_id", "item_id", "position"]]
    grades = qrels.set_index(["query_id", "doc_id"])["relevance"]
    keys = pd.MultiIndex.from_arrays([top["query_id"], top["item_id"]])
    grade = grades.reindex(keys).fillna(0).astype(int).to_numpy()
    top = top.assign(grade=grade).sort_values(["date", "system", "query_id", "position"])
    pages = {key: frame for key, frame in top.groupby(["date", "system", "query_id"], sort=True)}
    systems = sorted(run["system"].unique())
    segment = dict(zip(queries["query_id"], queries["segment"], strict=True))
    frames = []
    for date in sorted(run["date"].unique()):
        number = 0
        for qid in sorted(segment):
            for system in rng.choice(systems, size=rng.poisson(SEARCHES[segment[qid]])):
                page = pages.get((date, system, qid))
                if page is None:  # the system did not serve the query that day
                    continue
                number += 1
                frames.append(page.assign(search_id=f"{date}-{number:05d}"))
    log = pd.concat(frames, ignore_index=True)
    position = log["position"].to_numpy()
    grade = log["grade"].to_numpy()
    attractive = np.vectorize(ATTRACTIVENESS.get)(grade)
    examined = rng.random(len(log)) < true_examination(SHOWN)[position - 1]
    clicked = examined & (rng.random(len(log)) < attractive)
    dwell = rng.exponential(np.vectorize(DWELL.get)(grade))
    return pd.DataFrame({
        "search_id": log["search_id"],
        "query_id": log["query_id"],
        "item_id": log["item_id"],
        "position": position.astype(np.int32),
        "clicked": clicked.astype(np.int32),
        "dwell": np.where(clicked, np.round(dwell, 1), np.nan),
        "system": log["system"],
        "date": log["date"],
    })[COLUMNS]
