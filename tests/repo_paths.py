"""Where the repository's files are, for tests in any folder under tests/."""

from __future__ import annotations

from pathlib import Path

TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent
DOCS = ROOT / "docs"
TEXT_DUMPS = TESTS / "textdumps"
VECTORS = TESTS / "vectors"
