"""numba's on-disk cache: a second process loads the chain kernel instead of compiling it."""

import os
import subprocess
import sys

SCRIPT = """
import hamiltonia as hm
from hamiltonia.compiled.kernels import hmc_chunk
run = hm.sample("banana", "hmc", chains=1, warmup=20, draws=20, seed=0, progress=False)
assert run.attrs["compiled"]
print(sum(hmc_chunk.stats.cache_hits.values()), sum(hmc_chunk.stats.cache_misses.values()))
"""


def test_second_process_hits_the_cache(tmp_path):
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path)}
    counts = []
    for _ in range(2):
        out = subprocess.run(
            [sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True, check=True
        )
        counts.append(tuple(int(v) for v in out.stdout.split()))
    assert counts[0] == (0, 1)  # compiled and written
    assert counts[1] == (1, 0)  # loaded, not compiled
