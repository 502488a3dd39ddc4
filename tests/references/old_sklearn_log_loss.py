"""Old scikit-learn log loss: the literal of test_old_sklearn_log_loss_convention_is_reproducible.

scikit-learn up to 1.1 computed ``log_loss(y_true, y_pred)`` with ``eps=1e-15`` by default:
it clipped the probabilities to [1e-15, 1 - 1e-15] and then divided each row by its sum.
1.2 changed the default to ``eps="auto"``, the dtype's machine epsilon (on the input below
scikit-learn 1.9.1 gives 6.137351286278971). It needs its own environment (scikit-learn 1.1.3
and NumPy < 2; see requirements.txt); scikit-learn 1.4.2 with ``eps=1e-15`` passed gives the
same value. Run from the repository root::

    python tests/references/old_sklearn_log_loss.py

It prints the value that tests/test_scoring.py holds as OLD_SKLEARN_LOG_LOSS, on the input
below (which the test imports from here): rows with a zero and a one where the
clip matters, and rows rounded to two decimals whose sums (0.99, 1.01) the renormalisation
changes.
"""

from __future__ import annotations

import numpy as np
from _common import versions

LOG_LOSS_PROB = [
    [0.0, 0.5, 0.5],
    [1.0, 0.0, 0.0],
    [0.2, 0.3, 0.5],
    [0.33, 0.33, 0.33],
    [0.6, 0.25, 0.16],
    [0.05, 0.9, 0.05],
    [0.7, 0.2, 0.1],
]
LOG_LOSS_LABELS = [0, 0, 2, 1, 0, 2, 1]


def main() -> None:
    import sklearn
    from sklearn.metrics import log_loss

    if sklearn.__version__ != "1.1.3":
        print(f"# warning: made with scikit-learn 1.1.3, this is {sklearn.__version__}")
    value = log_loss(LOG_LOSS_LABELS, np.array(LOG_LOSS_PROB), labels=[0, 1, 2])
    print(f"# {versions('numpy', 'scipy', 'sklearn')}; log_loss(labels, prob) with eps=1e-15")
    print(f"OLD_SKLEARN_LOG_LOSS = {value!r}")


if __name__ == "__main__":
    main()
