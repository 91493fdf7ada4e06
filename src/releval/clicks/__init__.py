"""The search log as evidence: online measures, interleaving, labels from clicks.

``online`` and ``interleaving`` compute online measures as a ``Result``; ``simulate`` draws
logs from a known truth; ``position_bias`` fits the examination curve in Spark; ``labels``
turns a log into qrels-shaped click labels (``releval.click_labels``); ``batch`` is the batch
job's click step (the ``click_labels`` and ``position_bias`` tables).
"""
