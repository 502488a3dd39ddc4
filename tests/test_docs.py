"""The documentation site: built with warnings as errors, then opened in headless chromium.

The build needs the docs extra (``pip install ".[docs]"``): without Sphinx the tests skip
with that advice, except when the variable ``CI`` is set, where a missing Sphinx fails (the
readme leg of ``.ci/run`` installs the extra; the other legs deselect ``-m 'not docs'``).
The site is built from a copy of ``docs/``, ``README.md`` and ``notebooks/`` in a temporary
folder, so the checkout is left as it was.
"""

from __future__ import annotations

import ast
import functools
import importlib
import importlib.util
import inspect
import json
import os
import re
import shutil
import subprocess
import sys
import threading
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from tests.cli.test_html import CHROMIUM_FLAGS, find_chromium
from tests.documents import GUIDE, ROOT

# test_html's flags, but for the site's own server: every other host name still fails to
# resolve, so nothing reaches the network, whatever the page asks.
BROWSER_FLAGS = [
    *(flag for flag in CHROMIUM_FLAGS if not flag.startswith("--host-resolver-rules=")),
    "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
]
SPHINX_MISSING = (
    'Sphinx is not installed: install the docs extra (pip install ".[docs]"; .ci/run\'s '
    "readme leg does), or deselect these tests with -m 'not docs'."
)


def _public_modules() -> list[str]:
    """The public modules whose ``__all__`` the site documents: ``PUBLIC_MODULES`` of
    ``docs/conf.py`` (its one home), read without running the configuration."""
    tree = ast.parse((ROOT / "docs" / "conf.py").read_text(encoding="utf-8"))
    (value,) = [
        node.value
        for node in tree.body
        if isinstance(node, ast.Assign)
        and [getattr(target, "id", None) for target in node.targets] == ["PUBLIC_MODULES"]
    ]
    return list(ast.literal_eval(value))


def find_sphinx(environ=os.environ, find_spec=importlib.util.find_spec) -> None:
    """Return when Sphinx is importable; without it, skip outside CI and fail in CI."""
    if find_spec("sphinx") is not None:
        return
    if environ.get("CI", "").strip().lower() not in ("", "0", "false", "no"):
        pytest.fail(f"{SPHINX_MISSING} (CI is set, so the docs tests may not skip)")
    pytest.skip(SPHINX_MISSING)


@pytest.mark.parametrize(
    ("environ", "outcome"),
    [
        ({}, pytest.skip.Exception),
        ({"CI": "false"}, pytest.skip.Exception),
        ({"CI": "true"}, pytest.fail.Exception),
        ({"CI": "1"}, pytest.fail.Exception),
    ],
)
def test_a_missing_sphinx_skips_outside_ci_and_fails_in_ci(environ, outcome):
    with pytest.raises(outcome, match=r"pip install \"\.\[docs\]\".*-m 'not docs'"):
        find_sphinx(environ, find_spec=lambda name: None)


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """The site built from a copy of its sources: ``{"html": folder, "run": the build}``."""
    find_sphinx()
    folder = tmp_path_factory.mktemp("site")
    generated = shutil.ignore_patterns("_build", "api", "notebooks", "auto_examples")
    shutil.copytree(ROOT / "docs", folder / "docs", ignore=generated)
    shutil.copytree(ROOT / "notebooks", folder / "notebooks")
    shutil.copy2(ROOT / "README.md", folder / "README.md")
    html = folder / "docs" / "_build" / "html"
    command = [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b", "html"]
    run = subprocess.run(
        [*command, str(folder / "docs"), str(html)],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    return {"html": html, "run": run}


@pytest.mark.docs
def test_the_site_builds_without_a_warning(site):
    run = site["run"]
    assert run.returncode == 0, run.stderr[-4000:]
    assert "WARNING" not in run.stderr, run.stderr[-4000:]
    assert (site["html"] / "index.html").is_file()


@pytest.mark.docs
def test_every_public_name_has_a_page(site):
    pages = {path.name for path in (site["html"] / "api" / "generated").glob("*.html")}
    missing = []
    modules = _public_modules()
    assert "calibration_toolbox.stats" in modules and len(modules) >= 10
    for module_name in modules:
        module = importlib.import_module(module_name)
        for name in module.__all__:
            if inspect.ismodule(getattr(module, name)):
                continue
            if not any(page.endswith(f".{name}.html") for page in pages):
                missing.append(f"{module_name}.{name}")
    assert missing == []
    # and the page shows the docstring's formula, references and example
    page = (site["html"] / "api" / "generated" / "calibration_toolbox.ECE.html").read_text()
    assert "References" in page and "Examples" in page and "Guo" in page


@pytest.mark.docs
def test_every_guide_page_notebook_and_example_is_rendered(site):
    for page in GUIDE.glob("*.md"):
        assert (site["html"] / "guide" / f"{page.stem}.html").is_file(), page.name
    for notebook in (ROOT / "notebooks").glob("*.ipynb"):
        rendered = (site["html"] / "notebooks" / f"{notebook.stem}.html").read_text()
        assert "<img" in rendered, f"{notebook.name}: its stored figures are not on the page"
    examples = sorted((ROOT / "docs" / "examples").glob("plot_*.py"))
    assert examples
    for example in examples:  # executed at build time, each with its figure
        rendered = (site["html"] / "auto_examples" / f"{example.stem}.html").read_text()
        assert f"sphx_glr_{example.stem}_001.png" in rendered, example.name


class _QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, format, *args):
        """Log nothing: the test reads the browser's net log instead."""


@pytest.fixture(scope="module")
def served(site):
    """The built site served over HTTP on 127.0.0.1, as a reader's browser gets it (the
    search fetches pages, which a browser refuses from file:// URLs); its base URL."""
    handler = functools.partial(_QuietHandler, directory=str(site["html"]))
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()
    server.server_close()
    thread.join()


def _open(base: str, page: str, folder: Path) -> tuple[subprocess.CompletedProcess, list[str]]:
    """Open a page of the site in headless chromium.

    Returns the run (its DOM on stdout, its log on stderr) and the URLs the page requested
    from anywhere but the site.
    """
    run = subprocess.run(
        [
            find_chromium(),
            *BROWSER_FLAGS,
            f"--user-data-dir={folder / 'profile'}",
            f"--log-net-log={folder / 'net.json'}",
            "--virtual-time-budget=10000",  # let the page's scripts (the search) run
            "--dump-dom",
            base + page,
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    log = json.loads((folder / "net.json").read_text(encoding="utf-8"))
    types = log["constants"]["logEventTypes"]
    events = [event for event in log["events"] if "url" in event.get("params", {})]
    # every request of the page is a CORS_REQUEST event; the browser's own background
    # requests are too, and are told apart by their job's initiator ("not an origin")
    browser_own = {
        event["params"]["url"]
        for event in events
        if event["type"] == types["URL_REQUEST_START_JOB"]
        and event["params"].get("initiator") == "not an origin"
    }
    urls = {event["params"]["url"] for event in events if event["type"] == types["CORS_REQUEST"]}
    assert any(url.startswith(base + "_static/") for url in urls)  # the log was written
    return run, sorted(url for url in urls - browser_own if not url.startswith(base))


def _console(run) -> list[str]:
    """The console lines of a run but the theme's own notes (``[PST]: ...``, console.log).

    Chromium logs console.log and console.error alike, so the theme's notes are told apart
    by their prefix; any other line (an error, an uncaught exception, a refused load) counts.
    """
    lines = [line for line in run.stderr.splitlines() if ":CONSOLE" in line or "Uncaught" in line]
    return [line for line in lines if not re.search(r'CONSOLE:\d+\] "\[PST\]: ', line)]


@pytest.mark.docs
@pytest.mark.browser
def test_the_index_opens_without_a_console_error_or_an_external_request(served, tmp_path):
    run, external = _open(served, "index.html", tmp_path)
    assert external == []
    assert _console(run) == []
    assert "calibration-toolbox" in run.stdout and "Choosing a metric" in run.stdout


@pytest.mark.docs
@pytest.mark.browser
def test_the_search_page_answers(served, tmp_path):
    run, external = _open(served, "search.html?q=temperature", tmp_path)
    assert external == []
    assert _console(run) == []
    results = re.findall(r'href="[^"]*calibration_toolbox\.(\w+)\.html', run.stdout)
    assert "TemperatureScaling" in results, run.stdout[-3000:]
