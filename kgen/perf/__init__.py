"""The performance layer: the performance model (`kgen perf`), `kgen ab`'s comparisons and `kgen tune`'s search."""
