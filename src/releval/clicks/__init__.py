"""Search logs as evidence: labels and position bias from impressions and clicks.

``simulate`` draws logs from a known truth; ``position_bias`` fits the examination curve in
Spark; ``labels`` turns a log into qrels-shaped click labels (``releval.click_labels``).
"""
