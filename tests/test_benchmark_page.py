"""The benchmark page is generated from the committed result files, never edited by hand."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _generator():
    spec = importlib.util.spec_from_file_location(
        "benchmark_page", ROOT / "scripts/benchmark_page.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_committed_page_is_the_generated_one():
    generator = _generator()
    assert (ROOT / "docs/benchmarks.md").read_text() == generator.page(), (
        "docs/benchmarks.md differs from its generated text: run python scripts/benchmark_page.py"
    )


def test_every_result_file_is_on_the_page_with_its_command_and_machine():
    generator = _generator()
    text = generator.page()
    assert text.count("\n") <= 300
    for path in sorted((ROOT / "docs/results").glob("*/results.json")):
        document = json.loads(path.read_text())
        assert document["schema"] == 1
        assert f"## {document['title']}\n" in text
        assert f"\n{document['command']}\n" in text
        assert f"Machine: {document['machine']}." in text
        for row in document["rows"]:
            assert all(column in row for column in document["columns"]), path
