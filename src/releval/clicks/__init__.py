"""Search logs as evidence: labels and position bias from impressions and clicks, online
measures and interleaving.

``simulate`` draws logs from a known truth; ``position_bias`` fits the examination curve in
Spark; ``labels`` turns a log into qrels-shaped click labels (``releval.click_labels``);
``online`` and ``interleaving`` measure a log (``releval.evaluate_clicks``,
``releval.interleaving``); ``batch`` is the job's click step.
"""
