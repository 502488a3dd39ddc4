"""The documented pages whose examples the tests run: the README and the user guide.

One list, read by every test of the documentation (tests/cli/test_cli.py runs their python
blocks, tests/test_docs.py builds the site that holds them).
"""

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
GUIDE = ROOT / "docs" / "guide"
# Every page of the guide: a page added there is run without an edit here.
DOCUMENTED_PAGES = [README, *sorted(GUIDE.glob("*.md"))]
