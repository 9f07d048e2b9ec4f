"""Running chains: the run loop, its recording and checkpoints, resuming, executors, and
compiling a machine's kernels before its first run."""
