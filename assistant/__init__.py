"""Tingshuo (听说): an offline, hands-free Mandarin voice assistant."""

import os

# numpy's OpenBLAS starts a thread per core, which spins for a while after each call it shares. The
# models' own runtimes keep the cores busy, and numpy's matrices here are small (a log-mel
# filterbank): its second thread only took turns from them (Smart Turn's features beside Whisper's
# rescoring, benchmarks/turn.py). Set before numpy is first loaded; a caller's own setting stands.
# The worker process inherits it.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
