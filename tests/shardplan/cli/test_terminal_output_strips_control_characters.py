"""No value a user gave reaches the terminal as control codes (issue 33): an ESC sequence in a model or file name
cleared the screen (`ESC [2J`) or set the window title (`ESC ]0;...BEL`). boundary/terminal.py strips C0 controls but
tab and newline, DEL, C1, and whole ECMA-48 sequences from everything the CLI writes to stdout and stderr."""
from __future__ import annotations

import json
import shutil

import pytest

from boundary.terminal import strip_control
from tests.helpers.builders import hf_config, run_cli


@pytest.mark.parametrize("raw,clean", [
    ("a\x1b[2Jb", "ab"),                                   # CSI: erase display
    ("a\x1b[38;5;196mred\x1b[0m", "ared"),                 # CSI: colour, with parameters
    ("a\x1b]0;owned\x07b", "ab"),                          # OSC: window title, BEL-terminated
    ("a\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\b", "alinkb"),  # OSC 8 hyperlink, ST-terminated: the text stays
    ("a\x1bPq#0\x1b\\b", "ab"),                            # DCS (sixel)
    ("a\x9b2Jb", "ab"),                                    # 8-bit CSI
    ("a\x9d0;t\x9cb", "ab"),                               # 8-bit OSC, 8-bit ST
    ("a\x1bcb", "ab"),                                     # RIS: full reset
    ("a\rb\x08c\x00d\x7fe\x85f", "abcdef"),                # CR, BS, NUL, DEL, NEL (C1)
    ("tab\tand\nnewline", "tab\tand\nnewline"),            # kept
    ("Llama-3.1-8B · 中文 é", "Llama-3.1-8B · 中文 é"),     # printable text untouched
    ("cut\x1b[", "cut"),                                   # a sequence cut short
])
def test_strip_control(raw, clean):
    assert strip_control(raw) == clean


HOSTILE = "m\x1b[2J\x1b]0;owned\x07\r\x9b1m"


def test_a_model_file_name_reaches_no_terminal_as_control_codes(tmp_path):
    name = f"{HOSTILE}.json"
    shutil.copy(hf_config(tmp_path), tmp_path / name)
    args = ("--hardware", "h100-sxm-80gb", "--nodes", "1", "--seq-length", "4096", "--global-batch-size", "64", "--top", "2")
    for fmt in ("table", "csv", "markdown"):
        rc, out, err = run_cli("solve", "--model", str(tmp_path / name), *args, "--format", fmt)
        assert rc == 0, err
        assert not any(c in out + err for c in "\x1b\r\x07\x9b"), (fmt, out + err)
    rc, out, _ = run_cli("solve", "--model", str(tmp_path / name), *args, "--json")
    assert rc == 0 and "\x1b" not in out and json.loads(out)  # JSON escapes them itself (\\u001b): still valid JSON


def test_an_error_line_quoting_a_hostile_path_is_clean(tmp_path):
    rc, _, err = run_cli("check", str(tmp_path / f"{HOSTILE}.yaml"))
    assert rc == 2 and err.startswith("error: ") and err.count("\n") == 1
    assert not any(c in err for c in "\x1b\r\x07\x9b") and "owned" not in err
