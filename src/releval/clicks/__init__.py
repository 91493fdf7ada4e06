"""The search log as evidence: online measures, interleaving, labels from clicks."""
