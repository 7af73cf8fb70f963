"""Every command output shown in README.md and docs/ is what the commands print on the demo data
(`python -m offset_audit.examples` rewrites them after a change)."""

from __future__ import annotations

import pytest

from offset_audit import examples


@pytest.fixture(scope="module")
def printed(spark, tmp_path_factory):
    return examples.run_examples(tmp_path_factory.mktemp("examples"))


def test_every_example_block_names_an_example():
    names = {e.name for e in examples.EXAMPLES}
    for document in examples.DOCUMENTS:
        text = (examples.ROOT / document).read_text()
        assert set(examples.blocks_in(text)) <= names, document


@pytest.mark.parametrize("document", examples.DOCUMENTS)
def test_shown_outputs_are_what_the_commands_print(printed, document):
    text = (examples.ROOT / document).read_text()
    shown = examples.blocks_in(text)
    for name, body in shown.items():
        assert examples.masked(body) == examples.masked(printed[name]), (
            f"{document}: the output of example '{name}' changed; run python -m offset_audit.examples"
        )


def test_every_example_is_shown_somewhere(printed):
    shown = set()
    for document in examples.DOCUMENTS:
        shown |= set(examples.blocks_in((examples.ROOT / document).read_text()))
    assert shown == {e.name for e in examples.EXAMPLES}
