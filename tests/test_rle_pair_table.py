"""The byte-pair table of the compressed RLE decoder (``deteval.masks.rle._PAIR_VALUES``)
against the bit rules of pycocotools' ``rleFrString``, written out one character at a time."""

from __future__ import annotations

import numpy as np

from deteval.masks import rle


def number_ending_at(a: int, b: int) -> int:
    """The value of the number whose last character is byte ``b``, preceded by byte ``a``
    (each '0'..'o'), read as ``rleFrString`` reads characters: 5 bits each, least
    significant first, bit 5 "more follow", bit 4 of the last one the sign."""
    chars = [a - 48, b - 48] if a - 48 & 0x20 else [b - 48]
    x = 0
    for k, c in enumerate(chars):
        x |= (c & 0x1F) << 5 * k
    if chars[-1] & 0x10:
        x |= -1 << 5 * len(chars)
    return x


def test_the_pair_table_holds_every_two_character_number_as_pycocotools_reads_it():
    table = rle._PAIR_VALUES
    assert table.dtype == np.int64 and table.shape == (1 << 16,)
    assert table.flags.c_contiguous
    alphabet = range(48, 112)
    expected = np.array([number_ending_at(a, b) for a in alphabet for b in alphabet])
    at = np.array([a * 256 + b for a in alphabet for b in alphabet])
    np.testing.assert_array_equal(table[at], expected)


def test_the_pair_table_is_built_again_the_same():
    np.testing.assert_array_equal(rle._pair_values(), rle._PAIR_VALUES)
