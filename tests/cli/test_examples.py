"""Every command output shown in README.md and docs/ is what the commands print on the demo data
(`python -m offset_audit.cli.docs examples` rewrites them after a change)."""

from __future__ import annotations

import pytest

from offset_audit.cli import docs


@pytest.fixture(scope="module")
def printed(demo):
    return demo[1]


def test_every_example_block_names_an_example():
    names = {e.name for e in docs.EXAMPLES}
    for document in docs.DOCUMENTS:
        text = (docs.ROOT / document).read_text()
        assert set(docs.blocks_in(text)) <= names, document


@pytest.mark.parametrize("document", docs.DOCUMENTS)
def test_shown_outputs_are_what_the_commands_print(printed, document):
    text = (docs.ROOT / document).read_text()
    shown = docs.blocks_in(text)
    for name, body in shown.items():
        assert docs.masked(body) == docs.masked(printed[name]), (
            f"{document}: the output of example '{name}' changed; run python -m offset_audit.cli.docs examples"
        )


def test_every_example_is_shown_somewhere(printed):
    shown = set()
    for document in docs.DOCUMENTS:
        shown |= set(docs.blocks_in((docs.ROOT / document).read_text()))
    assert shown == {e.name for e in docs.EXAMPLES}
