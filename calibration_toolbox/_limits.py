"""The largest sizes an input may claim, each beside its reason (one home for each).

A few bytes can claim a size (``bins=10**9``, ``"n_classes_": 10**15`` in a saved model):
every size below is checked against its limit before anything of that size is allocated,
and a claim beyond it is refused with an error that names the argument and the limit.  The
limits are far above any real use, and far below what would exhaust a machine's memory.
"""

from __future__ import annotations

__all__ = [
    "MAX_BINS",
    "MAX_CLASSES",
    "MAX_FIT_LOGIT",
    "MAX_INFLATION",
    "MAX_NPY_HEADER",
    "MAX_TABLE_CELLS",
]

#: Largest number of bins of a binned measure, table or recalibrator (``bins=``).  A
#: per-(class, bin) table holds a few float64 sums per bin and per class: a million bins
#: is about 24 MiB per score set, and ``bins=10**9`` would ask for 7.45 GiB before reading
#: a single prediction.  Measures are read at 10 to 20 bins; even a million rows leave
#: about one row per bin at this limit.
MAX_BINS = 1_000_000

#: Largest number of cells of a per-(class, bin) table: score sets times bins.  Each cell
#: holds a few float64 sums (about 24 bytes), so 2**24 cells are about 400 MiB.  A
#: class-wise measure on one row of 1,000 classes (8 KB) with a million bins asked for
#: 7.45 GiB for its first array of sums; the largest label sets (ImageNet-21k: 21,841
#: classes) at 100 bins are 2.2 million cells, and a million classes at the default 15
#: bins are still within.
MAX_TABLE_CELLS = 2**24

#: Largest number of classes a saved recalibrator may claim (``n_classes_``).  A model's
#: ``classes_`` is ``np.arange(n_classes_)``, 8 MiB at this limit; ``10**15`` would ask for
#: 7 PiB.  The largest label sets in use (ImageNet-21k, about 21,000 classes) are far below.
MAX_CLASSES = 1_000_000

#: Largest magnitude of a logit that the softmax fits (temperature, vector and matrix
#: scaling, the ensemble's temperature) take.  Their passes sum squared logits in float32
#: (the feature moments and the curvature the preconditioner is built from): at 2**48
#: (2.8e14) the squares of a billion rows still sum below float32's largest value (2**128),
#: where logits of 1e20 overflowed it, and the fit's first step looped without end (1e50:
#: "did not converge", matrix scaling a LinAlgError).  Real logits lie within a few
#: hundred (float32's softmax is one-hot beyond 104); log-probabilities within 745.
MAX_FIT_LOGIT = 2.0**48

#: Largest ratio of a zip member's declared inflated size to its stored size.  Deflate
#: cannot do better than about 1032:1 (a run of one repeated byte), so a member of an
#: ``.npz`` that claims more is lying about its size, and is refused before a byte of it
#: is allocated (a 300-byte member claimed 21.8 TiB).
MAX_INFLATION = 1032

#: Largest header of a ``.npy`` file, in bytes: NumPy's own default ``max_header_size`` of
#: ``np.load``.  It is checked here from the header's declared length, before the header is
#: read, because reading it allocates the claimed length first (a 30-byte file claiming a
#: 2 GiB header raised MemoryError).
MAX_NPY_HEADER = 10_000
