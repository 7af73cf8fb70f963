"""Each setting is defined once (settings.py), and the CLI, conf/default.toml and docs/settings.md all come
from that definition: the same settings, the same defaults, the same ranges, checked by one function."""

from __future__ import annotations

import dataclasses
import re
import tomllib

import click
import pytest
from click.testing import CliRunner
from repo_paths import DOCS, ROOT

from offset_audit.cli.main import main
from offset_audit.cli.options import SettingOption
from offset_audit.errors import UserError
from offset_audit.runtime.config import load_settings
from offset_audit.setting_definitions import ANY_NAMES, OPTIONS, WHOLE, declared_in, define
from offset_audit.settings import BY_DEST, SETTINGS, Settings
from offset_audit.views.settings_docs import default_toml, settings_page


def _commands(group: click.Group, prefix: str = "") -> dict[str, click.Command]:
    found = {}
    for name, command in group.commands.items():
        if isinstance(command, click.Group):
            found.update(_commands(command, f"{prefix}{name} "))
        else:
            found[f"{prefix}{name}"] = command
    return found


def test_conf_default_toml_is_written_from_the_definitions_and_holds_each_default():
    text = (ROOT / "conf" / "default.toml").read_text()
    assert text == default_toml(), "run python -m offset_audit.cli.docs settings"
    raw = tomllib.loads(text)
    for setting in SETTINGS:
        if setting.kind is ANY_NAMES:
            assert raw.get(setting.section, {}) == setting.default, setting.section
        elif setting.kind is OPTIONS or setting.kind.toml(setting.default) is None:
            assert setting.key not in raw[setting.section], setting.key  # shown commented out
        else:
            assert raw[setting.section][setting.key] == setting.kind.toml(setting.default), setting.key
    listed = {
        (section, key) for section, values in raw.items() for key in values if section not in ("spark", "storage")
    }
    assert listed <= {(s.section, s.key) for s in SETTINGS}
    # Read back, the file is the defaults: nothing in it differs from what no file gives.
    assert load_settings(str(ROOT / "conf" / "default.toml")) == load_settings() == Settings()


def test_docs_settings_page_lists_every_setting_with_its_flag_and_default():
    text = (DOCS / "settings.md").read_text()
    assert text == settings_page(), "run python -m offset_audit.cli.docs settings"
    rows = re.findall(r"^\| (`[^`]+`|any name) \| (`[^`]*`)? \| (`[^`]*`)? \|", text, re.M)
    sections = re.findall(r"^## \[(\w+)\]", text, re.M)
    assert sections == list(dict.fromkeys(s.section for s in SETTINGS))
    assert len(rows) == len(SETTINGS)
    for (key, flag, default), setting in zip(rows, SETTINGS, strict=True):
        assert key.strip("`") == (setting.key or "any name")
        assert flag.strip("`") == setting.flag
        assert default.strip("`") == setting.default_text


# Options of the read commands that share a setting's name but pick what to show: no setting.
FILTERS = {"cluster": "which cluster of a fleet's folder", "topic": "describe's one topic"}


def test_every_flag_of_a_setting_is_made_from_its_definition():
    """A setting's flag says its TOML place and its default; every setting that has a flag is taken by some
    command, and no command takes a setting's value by a hand-made option."""
    seen = set()
    for name, command in _commands(main).items():
        for param in command.params:
            if isinstance(param, SettingOption):
                setting = param.setting
                assert param.name == setting.dest and BY_DEST[setting.dest] == setting, (name, param.name)
                where = f"[{setting.section}] {setting.key}".rstrip()
                assert where in (param.help or ""), (name, param.opts)
                if setting.shows_default:
                    assert f"default {setting.default_text})" in (param.help or ""), (name, param.opts)
                seen.add(setting.dest)
            elif param.name in BY_DEST and param.name not in FILTERS:
                pytest.fail(f"{name}: {param.opts} sets {param.name} without its definition")
    assert {s.dest for s in SETTINGS if s.flag} == seen


@pytest.mark.parametrize(
    ("conf", "flags", "said"),
    [
        ("[decode]\nmax_batch_mib = 5000\n", None, "max_batch_mib takes 1 to 4096 MiB, not 5000"),
        ("[audit]\ncheck_interval_ms = 0\n", None, "check_interval_ms takes 1 to 9223372036854775807 milliseconds"),
        ('[metrics]\ngranularity = "member"\n', None, "granularity takes group, topic or partition, not 'member'"),
        ("[metrics]\nmax_samples = 15\n", None, "max_samples takes 16 or more, not 15"),
        ('[output]\ndeleted_file_retention = "-1"\n', None, "deleted_file_retention in the config takes minutes"),
        ("", ["--retention-minutes", "0"], "'--retention-minutes': takes 1 to 2147483647 minutes"),
        ("", ["--partition", "-1"], "'--partition': takes 0 to 2147483647, not -1"),
    ],
)
def test_a_value_out_of_its_range_is_one_sentence_from_the_file_or_the_flag(no_spark, tmp_path, conf, flags, said):
    path = tmp_path / "mine.toml"
    path.write_text(conf)
    args = ["audit", "--conf", str(path), "--input", str(tmp_path), "--output", str(tmp_path / "out"), *(flags or [])]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 2 and said in result.stderr and result.stderr.count("\n") == 1, result.output


def test_the_api_meets_the_same_check_as_the_flag():
    with pytest.raises(UserError, match="--retention-minutes takes 1 to 2147483647 minutes"):
        load_settings(retention_minutes=2**31)
    with pytest.raises(UserError, match="--max-samples takes 16 or more, not 3"):
        load_settings(metrics_max_samples=3)


@dataclasses.dataclass(frozen=True)
class Extra:
    lanes: int = define(WHOLE, "how many lanes.", 4, low=1, high=8, flag="--lanes")


@dataclasses.dataclass(frozen=True)
class Sections:
    extra: Extra = dataclasses.field(default_factory=Extra)


def test_a_new_setting_is_one_definition():
    """What docs/development.md shows: one field, and the reading, the check and the docs follow."""

    (lanes,) = declared_in(Sections)
    assert (lanes.section, lanes.key, lanes.dest, lanes.default_text, lanes.bounds) == (
        "extra",
        "lanes",
        "lanes",
        "4",
        "1 to 8",
    )
    assert lanes.validated(8, "--lanes") == 8
    with pytest.raises(UserError, match="--lanes takes 1 to 8, not 9"):
        lanes.validated(9, "--lanes")
