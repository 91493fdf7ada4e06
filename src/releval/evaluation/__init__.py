"""The evaluation the public functions and the jobs share: checked inputs, the engine's result and its counts, the answers, a comparison's slices, run partitions."""
