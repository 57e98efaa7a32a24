"""The Python examples of the README and of the user pages with code cells run."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"

#: Pages written as MyST-NB text notebooks: their ``{code-cell}`` blocks run in the build.
PAGES_WITH_CELLS = ["docs/troubleshooting.md", "docs/scales.md"]


def test_readme_python_blocks_run():
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)
    assert blocks, "the README has no Python example"
    for block in blocks:
        exec(compile(block, str(README), "exec"), {})


@pytest.mark.parametrize("page", PAGES_WITH_CELLS)
def test_code_cells_of_the_page_run_in_order(page):
    """The cells share one namespace, as in the notebook the build executes."""
    path = ROOT / page
    cells = re.findall(r"```\{code-cell\} python\n(.*?)```", path.read_text(), flags=re.S)
    assert cells, f"{page} has no code cell"
    namespace: dict = {}
    for cell in cells:
        exec(compile(cell, str(path), "exec"), namespace)
