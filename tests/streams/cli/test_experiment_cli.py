"""``drift experiment report`` through the real entry point."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.stack import DRIFT

TABLE1 = Path(__file__).resolve().parents[3] / ".." / "shared" / "reference" / "tinytroupe-table1"


def test_report_needs_an_input() -> None:
    done = subprocess.run([DRIFT, "experiment", "report"], capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 2
    assert done.stderr.strip() == "drift: give --raw FILE.json (results in the paper's format)"


def test_html_report_of_every_raw_file_with_charts(tmp_path: Path) -> None:
    if not TABLE1.is_dir():
        pytest.skip(f"the paper's raw Table 1 files are not at {TABLE1} (../shared/reference): skipped")
    files = sorted(TABLE1.glob("*.json"))
    args = [arg for f in files for arg in ("--raw", str(f))]
    out = tmp_path / "report.html"
    done = subprocess.run(
        [DRIFT, "experiment", "report", *args, "--format", "html", "--output", str(out)],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    page = out.read_text()
    assert page.count("<h2>") == len(files)
    assert page.count("data:image/png;base64,") == sum(1 for _ in (tmp_path / "charts").glob("*.png"))
    as_json = subprocess.run(
        [DRIFT, "experiment", "report", *args[:2], "--format", "json"], capture_output=True, text=True, timeout=60,
        check=False,
    )  # fmt: skip
    assert json.loads(as_json.stdout)["experiments"][0]["metrics"]
