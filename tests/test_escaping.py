"""Hostile names, made inert for each medium (offset_audit.escaping): a group id may hold any character."""

from __future__ import annotations

import html.parser
import json
import subprocess

import pytest

from offset_audit import escaping

HOSTILE = [
    "nl\ntouch X",
    "cr\rhidden",
    "quote'and\"double",
    "$(touch X)",
    "`touch X`",
    "esc\x1b]0;title\x07\x1b[2J",
    "<script>alert(1)</script>",
    "bidi\u202etxt.exe",
    "zero\u200bwidth",
    "--all-groups",
    "back\\slash\\n",
    "line\u2028separator",
    "tab\there",
    '=HYPERLINK("http://x")',
    "grüppe 日本",
    "x" * 5000,
    "",
    "bad\udcffbyte",
]


@pytest.mark.parametrize("name", HOSTILE, ids=range(len(HOSTILE)))
def test_terminal_text_has_nothing_a_terminal_acts_on(name):
    shown = escaping.terminal(name)
    assert shown.isprintable()
    assert "\n" not in shown and "\x1b" not in shown and "\u202e" not in shown


def test_terminal_escapes_are_visible_and_cannot_be_faked():
    assert escaping.terminal("a\nb") == "a\\nb"
    assert escaping.terminal("a\\nb") == "a\\\\nb"  # a name holding backslash-n is not a newline
    assert escaping.terminal("\x1b[31m") == "\\x1b[31m"
    assert escaping.terminal("bad\udcffbyte") == "bad\\xffbyte"
    assert escaping.terminal("grüppe") == "grüppe"


@pytest.mark.parametrize("name", [n for n in HOSTILE if "\udcff" not in n], ids=str)
def test_a_shell_word_reaches_the_program_exactly_and_runs_nothing(tmp_path, name):
    script = tmp_path / "probe.sh"
    script.write_text(f"printf '%s' {escaping.shell_word(name)} > out\n# {escaping.shell_comment(name)}\n")
    subprocess.run(["bash", str(script)], cwd=tmp_path, check=True)
    assert (tmp_path / "out").read_bytes() == name.encode()
    assert not (tmp_path / "X").exists()
    assert all(line.isprintable() for line in script.read_text().splitlines())


def test_a_nul_cannot_be_an_argument_and_is_refused():
    with pytest.raises(escaping.NotAShellArgument, match="NUL"):
        escaping.shell_word("a\x00b")


class _Collector(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.tags, self.text = [], ""

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)

    def handle_data(self, data):
        self.text += data


@pytest.mark.parametrize("name", HOSTILE, ids=range(len(HOSTILE)))
def test_html_text_is_text_and_never_markup(name):
    parser = _Collector()
    parser.feed(f'<p title="{escaping.html_text(name)}">{escaping.html_text(name)}</p>')
    assert parser.tags == ["p"]
    assert parser.text == escaping.terminal(name)


def test_json_in_a_script_block_cannot_close_it():
    embedded = escaping.json_for_html({"group": "</script><script>alert(1)</script>", "ls": "a\u2028b"})
    assert "</" not in embedded and "<" not in embedded and "\u2028" not in embedded
    assert json.loads(embedded) == {"group": "</script><script>alert(1)</script>", "ls": "a\u2028b"}


@pytest.mark.parametrize("name", HOSTILE, ids=range(len(HOSTILE)))
def test_a_prometheus_label_stays_one_label_on_one_line(name):
    line = f'kafka_offset_audit_lag{{group="{escaping.prometheus_label(name)}"}} 1'
    assert "\n" not in line
    # The value ends at the first double quote not preceded by an escaping backslash.
    value, rest = _label_value(line[len('kafka_offset_audit_lag{group="') :])
    assert rest == "} 1"
    assert value == escaping.stored_text(name)


def _label_value(text):
    out, i = "", 0
    while text[i] != '"':
        if text[i] == "\\":
            out += {"n": "\n", "\\": "\\", '"': '"'}[text[i + 1]]
            i += 2
        else:
            out += text[i]
            i += 1
    return out, text[i + 1 :]


def test_text_read_with_surrogate_escapes_can_be_stored():
    assert escaping.stored_text("gr\udcfc") == "gr\\xfc"
    assert escaping.stored_text("grü") == "grü"
