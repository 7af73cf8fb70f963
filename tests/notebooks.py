"""The example notebook's code, as the tests run it: its code cells in order, as one program."""

from __future__ import annotations

import json

from repo_paths import ROOT

NOTEBOOK = ROOT / "examples" / "audit_with_the_api.ipynb"


def notebook_code() -> str:
    cells = json.loads(NOTEBOOK.read_text())["cells"]
    return "\n\n".join("".join(cell["source"]) for cell in cells if cell["cell_type"] == "code")
