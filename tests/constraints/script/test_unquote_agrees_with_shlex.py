"""constraints.script.unquote.posix_split returns what shlex.split (POSIX mode) returns, words and errors alike, in
linear time: shlex was quadratic in a word's length (issue 33)."""
from __future__ import annotations

import shlex
import time

from hypothesis import given, settings
from hypothesis import strategies as st

from constraints.script.unquote import posix_split


def _split(split, text):
    try:
        return split(text)
    except ValueError:
        return ValueError


@settings(max_examples=3000, deadline=None)
@given(st.text(alphabet="ab \t\n'\"\\$`{}", max_size=24))
def test_words_and_errors_match_shlex(text):
    assert _split(posix_split, text) == _split(shlex.split, text)


def test_a_long_word_splits_in_linear_time():
    word = '"' + "x" * 4_000_000 + '"'
    start = time.monotonic()
    assert posix_split(word) == ["x" * 4_000_000]
    assert time.monotonic() - start < 2  # shlex.split took 4 s on 400 KB
