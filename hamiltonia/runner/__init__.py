"""Running chains: the run loop, its recording and checkpoints, resuming, executors."""
