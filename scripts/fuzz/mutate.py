"""Seeded mutators for JSON trees, raw bytes and text lines (see the package docstring)."""

from __future__ import annotations

import copy
import json
import random
from typing import Any

NAN = float("nan")
INF = float("inf")

# Numbers that broke readers or C routines before, or sit on a type's edge.
EDGE_NUMBERS: tuple[Any, ...] = (
    0, -1, 1, 0.5, -0.5, 2, 7, 255, 2**31 - 1, 2**31, 2147483956, 2**32, 2**32 + 1, 2**53,
    2**53 + 1, 2**63 - 1, 2**63, 2**64 - 1, 2**64, -2**63, -2**63 - 1, -2**63 - 2, 10**30,
    1e8, 1e7, -1e8, 4.3e8, 1e150, 1e300, 1.7976931348623157e308, -1e308, 5e-324, 1e-9,
    NAN, INF, -INF, 65535, 65536, 100000,
)
ODD_STRINGS: tuple[str, ...] = (
    "", "a", "12", "１２", "١٢", "12_0", "12\x00", "\ud800", "caf\u00e9", "0" * 300,
    "NaN", "1e5", "\x00", "\u202e", "null", "..",
)


def odd_value(rng: random.Random) -> Any:
    """A value of a random type, often an edge case."""
    kind = rng.randrange(10)
    if kind < 4:
        return rng.choice(EDGE_NUMBERS)
    if kind == 4:
        return rng.choice(ODD_STRINGS)
    if kind == 5:
        return rng.choice((None, True, False))
    if kind == 6:
        return rng.choice(([], {}, [1], [1, 2, 3], [1, 2, 3, 4, 5], {"a": 1}))
    if kind == 7:
        return deep_list(rng.choice((50, 900, 1100, 5000)))
    if kind == 8:
        return rng.uniform(-1e3, 1e3)
    return rng.randint(-5, 5)


def deep_list(depth: int) -> Any:
    """A list nested ``depth`` deep: a marker that :func:`dump_json` writes out (Python's
    json cannot write it)."""
    return f"__DEEP_{depth}__"


def _containers(node: Any, path: tuple = ()) -> list[tuple[tuple, Any]]:
    """Every list and dict in the tree with its path (bounded: the first 400)."""
    out: list[tuple[tuple, Any]] = []
    stack = [(path, node)]
    while stack and len(out) < 400:
        p, value = stack.pop()
        if isinstance(value, (list, dict)):
            out.append((p, value))
            items = value.items() if isinstance(value, dict) else enumerate(value)
            for key, child in items:
                if isinstance(child, (list, dict)) and len(p) < 12:
                    stack.append((p + (key,), child))
    return out


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _mutate_node(rng: random.Random, node: dict | list) -> None:
    """One mutation of a dict or list in place: a slot (key or index) deleted, replaced by an
    odd value, wrapped, scaled, duplicated, or a slot added."""
    if not node:
        if isinstance(node, dict):
            node[rng.choice(("id", "bbox", "x"))] = odd_value(rng)
        else:
            node.append(odd_value(rng))
        return
    slot = rng.choice(list(node)) if isinstance(node, dict) else rng.randrange(len(node))
    value = node[slot]
    op = rng.randrange(9)
    if op < 2:
        del node[slot]
    elif op < 5:
        node[slot] = odd_value(rng)
    elif op == 5:
        node[slot] = [value] if rng.random() < 0.5 else {"v": value}
    elif op == 6 and _is_number(value):
        node[slot] = value * rng.choice((-1, 10**6, 2**31, 10**12, 1e9, 1e100, 1e300))
    elif isinstance(node, dict):       # a key records often carry, with an odd value
        node[rng.choice(("ignore", "iscrowd", "area", "score", "name", "extra"))] = \
            odd_value(rng)
    elif op == 7:                      # a duplicated element (duplicated ids)
        node.insert(slot, copy.deepcopy(node[rng.randrange(len(node))]))
    else:
        node.append(odd_value(rng)) if rng.random() < 0.5 else node.reverse()


def mutate_tree(rng: random.Random, doc: Any, count: int) -> Any:
    """``count`` random structural mutations of a copy of ``doc``."""
    doc = copy.deepcopy(doc)
    for _ in range(count):
        nodes = _containers(doc)
        if not nodes:
            return odd_value(rng)
        _mutate_node(rng, rng.choice(nodes)[1])
    return doc


def dump_json(doc: Any) -> bytes:
    """JSON as Python's json writes it: NaN and Infinity literally, lone surrogates escaped."""
    text = json.dumps(doc, allow_nan=True)
    for depth in (50, 900, 1100, 5000):
        text = text.replace(f'"__DEEP_{depth}__"', "[" * depth + "1" + "]" * depth)
    return text.encode("utf-8", "surrogatepass")


def mutate_bytes(rng: random.Random, raw: bytes) -> bytes:
    """One byte-level mutation: a bad encoding, a truncation, a flipped byte."""
    op = rng.randrange(10)
    if op == 0 and len(raw) > 2:
        return raw[:rng.randrange(1, len(raw))]                       # truncated
    if op == 1:
        return raw.decode("utf-8", "surrogatepass").encode("utf-16", "surrogatepass")
    if op == 2:
        return b"\xef\xbb\xbf" + raw                                   # UTF-8 BOM
    if op == 3:
        at = raw.find(b'"', rng.randrange(max(1, len(raw))))
        if at >= 0:
            return raw[:at + 1] + rng.choice((b"\xff", b"\xe9", b"\xc3", b"\xed\xa0\x80")) + \
                raw[at + 1:]                                           # invalid UTF-8 in a string
    if op == 4:
        at = raw.find(b'"', rng.randrange(max(1, len(raw))))
        if at >= 0:
            return raw[:at + 1] + b"\\ud800" + raw[at + 1:]           # lone surrogate escape
    if op == 5 and raw:
        at = rng.randrange(len(raw))
        return raw[:at] + bytes([rng.randrange(256)]) + raw[at + 1:]
    if op == 6:
        return raw.replace(b"]", b"]" * rng.choice((2, 1)), 1)
    if op == 7:
        return b"[" * rng.choice((2000, 100000)) + b"]" * 10
    if op == 8:
        return raw.replace(b"1", b"\xd9\xa1", 1)                      # Arabic-Indic one
    return raw


TEXT_TOKENS = ("١٢", "１２", "12_0", "12\x00", "nan", "inf", "-inf", "1e400", "-5", "", "x",
               "0,5", "1e-400", "9" * 40, "0x10", "\t", "2147483956", "-0", "+1", ".", "1.5.5")


def mutate_lines(rng: random.Random, text: str, count: int) -> str:
    """``count`` mutations of a line-based text file: tokens, fields, lines."""
    lines = text.splitlines()
    for _ in range(count):
        if not lines:
            lines.append(" ".join(rng.choice(TEXT_TOKENS) for _ in range(rng.randrange(8))))
            continue
        i = rng.randrange(len(lines))
        sep = "," if "," in lines[i] and " " not in lines[i] else " "
        fields = lines[i].split(sep)
        op = rng.randrange(8)
        if op < 3 and fields:
            fields[rng.randrange(len(fields))] = rng.choice(TEXT_TOKENS)
        elif op == 3 and fields:
            del fields[rng.randrange(len(fields))]
        elif op == 4:
            fields.append(rng.choice(TEXT_TOKENS))
        elif op == 5:
            lines.insert(i, lines[i])
        elif op == 6:
            del lines[i]
            continue
        else:
            j = rng.randrange(len(fields))
            fields[j] = fields[j] + rng.choice(("\x00", "_0", "e9", "\u0663", "\r"))
        lines[i] = sep.join(fields)
    return "\n".join(lines) + ("\n" if rng.random() < 0.8 else "")
