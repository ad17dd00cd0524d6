"""The scan for a ``\\u`` escape before the lone-surrogate check (deteval.io._json): on files
large enough for its 16-bit word comparisons, at even and odd offsets, it finds what
``b"\\\\u" in raw`` finds, and a lone surrogate is refused wherever it sits."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

from deteval.errors import FormatError
from deteval.io._json import _holds_escape_u, checked_json_bytes

BIG = 1 << 17       # above the size where the word comparison replaces `in`


@pytest.mark.parametrize("n", [BIG - 1, BIG, BIG + 1])
def test_the_word_scan_finds_what_in_finds(n):
    rng = np.random.default_rng(n)
    alphabet = np.frombuffer(b"\\ua", dtype=np.uint8)
    for _ in range(20):     # random texts of backslashes, u's and a's: mostly holding one
        raw = rng.choice(alphabet, n).tobytes()
        assert _holds_escape_u(raw) == (b"\\u" in raw)
    plain = bytearray(b"\\" * n)    # backslashes only: none
    assert not _holds_escape_u(bytes(plain))
    for at in (0, 1, n // 2, n // 2 + 1, n - 2):    # one escape, at each parity and both ends
        text = bytearray(plain)
        text[at + 1] = ord("u")
        assert _holds_escape_u(bytes(text)), at
        assert b"\\u" in text


@pytest.mark.parametrize("pad", [0, 1])
def test_a_lone_surrogate_in_a_large_segm_file_is_refused_at_either_parity(tmp_path, pad):
    # Counts strings full of backslashes (a character of the RLE alphabet), as segm results
    # files hold: only the real escape may count.
    record = {"image_id": 1, "category_id": 1, "score": 0.5,
              "segmentation": {"size": [4, 4], "counts": "\\" * 64}}
    body = json.dumps([record] * (BIG // 100))
    text = body[:-1] + ", " + " " * pad + '{"note": "\\ud800"}]'
    path = tmp_path / "dt.json"
    path.write_text(text)
    raw = path.read_bytes()
    assert len(raw) > BIG
    with pytest.raises(FormatError, match=re.escape("lone UTF-16 surrogate escape")):
        checked_json_bytes(raw, path, what="results")
    path.write_text(body)           # the same backslashes without the escape: read as is
    assert checked_json_bytes(path.read_bytes(), path, what="results") == path.read_bytes()
