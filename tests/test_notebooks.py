"""The tutorials in notebooks/: stored executed, and still running against this version."""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

import pytest

from tests.conftest import DATA_DIR

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
# Strings that would tie a notebook to one machine: the checkout's own folders, a home or
# temporary directory, an installed package's path (a warning's source line shows one).
# The folders of this machine that a stored notebook must not name: beside the checkout,
# the temporary folder, the home folders, the interpreter's.
MACHINE_PATHS = (
    str(ROOT.parent),
    tempfile.gettempdir(),
    str(Path.home()),
    "/home/",
    "site-packages",
    sys.prefix,
)


def test_the_four_tutorials_are_there():
    names = [path.name for path in NOTEBOOKS]
    assert names == [
        "01_quickstart.ipynb",
        "02_which_metric.ipynb",
        "03_recalibration.ipynb",
        "04_recalibration_cifar.ipynb",
    ]


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda path: path.stem)
def test_stored_notebooks_are_executed_small_and_name_no_folder_of_this_machine(notebook):
    text = notebook.read_text(encoding="utf-8")
    for path in MACHINE_PATHS:
        assert path not in text
    assert notebook.stat().st_size < 300_000
    cells = [cell for cell in json.loads(text)["cells"] if cell["cell_type"] == "code"]
    # executed in order, from a fresh kernel, every cell with its output and none with an
    # error or a warning (a warning shows as a stderr stream)
    assert [cell["execution_count"] for cell in cells] == list(range(1, len(cells) + 1))
    outputs = [output for cell in cells for output in cell["outputs"]]
    assert all(cell["outputs"] for cell in cells)
    assert not [output for output in outputs if output["output_type"] == "error"]
    assert not [output for output in outputs if output.get("name") == "stderr"]
    assert any("image/png" in output.get("data", {}) for output in outputs)  # a figure each


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda path: path.stem)
def test_notebooks_run(notebook, tmp_path):
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    pytest.importorskip("ipykernel")
    # A copy in a temporary notebooks/ folder: the repository is not modified. The kernel
    # ("python3": this interpreter) imports this checkout and finds the real predictions
    # where the tests do.
    stored = notebook.read_bytes()
    folder = tmp_path / "notebooks"
    folder.mkdir()
    copy = Path(shutil.copy(notebook, folder))
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
        "CALIBRATION_TOOLBOX_DATA": str(DATA_DIR),
        "MPLBACKEND": "Agg",
    }
    executed = nbformat.read(copy, as_version=4)
    client = nbclient.NotebookClient(
        executed,
        kernel_name="python3",
        timeout=120,
        allow_errors=False,
        resources={"metadata": {"path": str(folder)}},
    )
    client.execute(env=env)  # raises CellExecutionError on the first failing cell
    streams = [
        output
        for cell in executed.cells
        if cell.cell_type == "code"
        for output in cell.outputs
        if output.get("name") == "stderr"
    ]
    assert not streams, streams  # no warning either
    assert notebook.read_bytes() == stored
