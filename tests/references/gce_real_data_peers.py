"""Peer values on the shared real predictions: PEERS and the torchmetrics L2 value in test_gce.py.

Run from the repository root in the peers environment of tests/references/requirements.txt::

    python tests/references/gce_real_data_peers.py [DATA_FOLDER]

DATA_FOLDER defaults to $CALIBRATION_TOOLBOX_DATA, else ../shared/data beside the repository.
Each peer gets the float32 predictions cast to float64 and the int64 labels:

* ECE, SCE, ACE, TACE: uncertainty_metrics.numpy.ece / sce / ace / tace(labels, probs,
  num_bins=15) (TACE with threshold=0.01, its default);
* MCE: netcal.metrics.MCE(bins=15).measure(probs, labels);
* NLL: sklearn.metrics.log_loss(labels, probs, labels=range(K));
* ECE_kumar (not stored, printed as a cross-check of ECE):
  calibration.get_ece(probs, labels, num_bins=15) of Kumar et al.'s uncertainty-calibration;
* torchmetrics L2: torchmetrics.functional.classification.multiclass_calibration_error(
  torch.from_numpy(probs), torch.from_numpy(labels), num_classes=K, n_bins=15, norm="l2")
  on wideresnet-16-4-cifar-10, the literal of
  test_torchmetrics_l2_differs_by_its_phantom_bin_for_one_point_zero.

The dictionary printed is the one tests/test_gce.py holds as PEERS.
"""

from __future__ import annotations

import warnings

import numpy as np
from _common import REAL_FILES, data_dir, load_real, versions


def peer_values(prob: np.ndarray, labels: np.ndarray) -> dict[str, float]:
    import calibration
    import netcal.metrics
    import sklearn.metrics
    import uncertainty_metrics.numpy as um

    n_classes = prob.shape[1]
    return dict(
        ECE=float(um.ece(labels, prob, num_bins=15)),
        SCE=float(um.sce(labels, prob, num_bins=15)),
        ACE=float(um.ace(labels, prob, num_bins=15)),
        TACE=float(um.tace(labels, prob, num_bins=15, threshold=0.01)),
        MCE=float(netcal.metrics.MCE(bins=15).measure(prob, labels)),
        NLL=float(sklearn.metrics.log_loss(labels, prob, labels=range(n_classes))),
        ECE_kumar=float(calibration.get_ece(prob, labels, num_bins=15)),
    )


def torchmetrics_l2(prob: np.ndarray, labels: np.ndarray) -> float:
    import torch
    from torchmetrics.functional.classification import multiclass_calibration_error

    value = multiclass_calibration_error(
        torch.from_numpy(prob),
        torch.from_numpy(labels),
        num_classes=prob.shape[1],
        n_bins=15,
        norm="l2",
    )
    return float(value)


def main() -> None:
    folder = data_dir()
    real = {name: load_real(folder, name) for name in REAL_FILES}
    print(f"# {versions('numpy', 'scipy', 'sklearn', 'netcal', 'torch', 'torchmetrics')}")
    print("PEERS = {")
    for name, (prob32, labels) in real.items():
        prob, labels = prob32.astype(np.float64), labels.astype(np.int64)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            values = peer_values(prob, labels)
        kumar = values.pop("ECE_kumar")
        print(f'    "{name}": dict(')
        for metric, value in values.items():
            print(f"        {metric}={value!r},")
        print(f"    ),  # Kumar get_ece: {kumar!r}")
    print("}")
    prob32, labels = real["wideresnet-16-4-cifar-10"]
    value = torchmetrics_l2(prob32.astype(np.float64), labels.astype(np.int64))
    print(f"# torchmetrics L2 on wideresnet-16-4-cifar-10: {value!r}")


if __name__ == "__main__":
    main()
