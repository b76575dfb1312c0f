"""Untrusted text (an LLM's rationale, a reply's strings) in one canonical form before it is filtered or shown.

Why: a filter that looks for "ignore previous instructions" misses "ig\u200bnore previous" (a zero-width space,
Unicode category Cf, renders as nothing) and "ｉｇｎｏｒｅ" (fullwidth letters), yet a terminal shows both as the
phrase (issue 17). NFKC folds compatibility forms (fullwidth, ligatures, superscripts) to their plain letters
(Unicode Standard Annex #15), and dropping every format character (category Cf: zero-width spaces and joiners,
bidi overrides, soft hyphens, tag characters) removes what has no visible glyph of its own.
"""
from __future__ import annotations

import unicodedata


def normalise_untrusted(text: str) -> str:
    """`text` with format characters (Cf) removed and NFKC applied (Cf removed again: NFKC may expose some)."""
    stripped = "".join(ch for ch in text if unicodedata.category(ch) != "Cf")
    folded = unicodedata.normalize("NFKC", stripped)
    return "".join(ch for ch in folded if unicodedata.category(ch) != "Cf")
