"""Differential fuzz of the numpy readers (docs/fast-reader.md, docs/keypoint-reader.md)
against the msgspec/json path they stand in for.

Kinds:

``reader-bbox``
    A COCO bbox results file; ``read_coco_results`` and ``load_pair`` with the numpy reader
    (forced on: no size or digit gate, small pieces, 1-3 threads) and with it switched off.
``reader-keypoints``
    The same for a keypoint results file (the keypoint reader, when the checkout has it).
``reader-kpgt``
    A person-keypoints ground truth whose ``keypoints`` lists are mutated;
    ``read_coco_gt`` with the lists' reader and without.

The files are valid texts mutated where the reader looks: number spellings (exponents,
``-0``, ``1e400``, leading zeros, ``.5``, huge integers, many digits, ``NaN``/``Infinity``),
whitespace and control bytes between tokens, key order, duplicate, missing and extra keys,
unicode escapes in keys, arrays of the wrong length, truncation, a BOM, an empty list.
The oracle (``{"read": "readers"}``) runs both ways in the case's child and compares the
outcomes: bit-identical arrays (every field of the dataset and of the detections), or the
same error (type and message). A reader must give what the fallback gives, or refuse.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import random
import re
from typing import Any

from .generators import Case, coco_gt, coco_results

__all__ = ["MAKERS", "reader_comparisons"]

#: Number spellings (text): the same value written otherwise, or a value on an edge.
SPELLINGS = ("1e2", "1E+2", "1e-2", "-0", "-0.0", "0.0", "1e400", "-1e400", "1e-400",
             "007", "00", ".5", "5.", "-.5", "+1", "1" + "0" * 25, "0." + "1" * 30,
             "3." + "3" * 20, "NaN", "Infinity", "-Infinity", "nan", "1_0", "0x10",
             "4.9e-324", "2.2250738585072011e-308", "9007199254740993", "123456789012345678",
             "1234567890123456789", "99999999999999999999", "-5", "1.0", "1e0", "2.50",
             "1.7976931348623157e308", "1.8e308", "12.345678", "123456.7", "0.1e1", "1e+0",
             "-", "1e", "1.", "--1", "1.2.3", "١", "true", "null", '"1"', "[1]")
WHITESPACE = (" ", "  ", "\n", "\t", "\r\n", "\r", "\x0b", "\x0c", "\x00", "\x1f", "\xa0")
NUMBER = re.compile(rb"-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?")


def _records_text(rng: random.Random, records: list) -> bytes:
    """The records as a JSON array in one of the common layouts."""
    layout = rng.randrange(4)
    if layout == 0:
        return json.dumps(records).encode()
    if layout == 1:
        return json.dumps(records, separators=(",", ":")).encode()
    if layout == 2:
        return ("[" + ",\n".join(json.dumps(r) for r in records) + "]").encode()
    return json.dumps(records, indent=rng.choice((1, 2))).encode()


def _many(rng: random.Random, records: list, n: int) -> list:
    """``records`` repeated (scores varied) to about ``n`` records: pieces of several."""
    if not records:
        return records
    out = []
    while len(out) < n:
        for record in records:
            out.append(dict(record, score=round(rng.random(), rng.choice((1, 2, 3, 6)))))
    return out[:n]


def _mutate_text(rng: random.Random, raw: bytes, key_names: tuple[str, ...]) -> bytes:
    """One mutation of a valid JSON text where the numpy readers look."""
    op = rng.randrange(13)
    numbers = [m.span() for m in NUMBER.finditer(raw)]
    if op <= 2 and numbers:          # a number spelled otherwise (several at times)
        for _ in range(rng.choice((1, 1, 2, 5))):
            a, b = rng.choice(numbers)
            value = rng.choice(SPELLINGS)
            raw = raw[:a] + value.encode() + raw[b:]
            numbers = [m.span() for m in NUMBER.finditer(raw)]
        return raw
    if op == 3:                      # whitespace or a control byte between two tokens
        spots = [m.end() for m in re.finditer(rb"[,:\[\]{}]", raw)]
        if spots:
            at = rng.choice(spots)
            return raw[:at] + rng.choice(WHITESPACE).encode("latin-1") + raw[at:]
    if op == 4:                      # key order swapped in one record
        records = list(re.finditer(rb"\{[^{}]*\}", raw))
        if records:
            m = rng.choice(records)
            try:
                record = json.loads(m.group())
            except ValueError:
                return raw
            items = list(record.items())
            rng.shuffle(items)
            new = json.dumps(dict(items)).encode()
            return raw[:m.start()] + new + raw[m.end():]
    if op == 5:                      # a duplicate, missing, extra or escaped key
        key = rng.choice(key_names).encode()
        spots = [m.span() for m in re.finditer(b'"' + key + b'"', raw)]
        if spots:
            a, b = rng.choice(spots)
            choice = rng.randrange(5)
            if choice == 0:          # duplicate: "key": 1, "key": <original>
                return raw[:a] + b'"' + key + b'": 1, ' + raw[a:]
            if choice == 1:          # missing: the key renamed
                return raw[:a] + b'"' + key + b'_"' + raw[b:]
            if choice == 2:          # extra key
                extra = rng.choice((b'"id": 3, ', b'"segmentation": [], ', b'"x": "y", ',
                                    b'"area": 1.5, ', b'"bbox": [], '))
                return raw[:a] + extra + raw[a:]
            if choice == 3:          # a unicode escape in the key
                text = key.decode()
                i = rng.randrange(len(text))
                escaped = text[:i] + f"\\u{ord(text[i]):04x}" + text[i + 1:]
                return raw[:a] + b'"' + escaped.encode() + b'"' + raw[b:]
            return raw[:a] + b'"' + key.upper() + b'"' + raw[b:]
    if op == 6:                      # an array one value short or long, or nested
        arrays = [m.span() for m in re.finditer(rb"\[[^\[\]{}]*\]", raw)]
        if arrays:
            a, b = rng.choice(arrays)
            inner = raw[a + 1:b - 1]
            choice = rng.randrange(4)
            if choice == 0 and b"," in inner:
                inner = inner[:inner.rindex(b",")]
            elif choice == 1:
                inner = inner + b", 1.5"
            elif choice == 2:
                inner = b"[" + inner + b"]"
            else:
                inner = b""
            return raw[:a + 1] + inner + raw[b - 1:]
    if op == 7:
        return raw[:rng.randrange(len(raw) + 1)]                 # truncated
    if op == 8:
        return b"\xef\xbb\xbf" + raw                              # a BOM
    if op == 9:
        return rng.choice((b"[]", b"[ ]", b" [\n] ", b"[{}]", b"{}", b"", b"null"))
    if op == 10:                     # a record as another JSON value
        records = list(re.finditer(rb"\{[^{}]*\}", raw))
        if records:
            m = rng.choice(records)
            return raw[:m.start()] + rng.choice((b"1", b"null", b"[]", b'"x"')) + raw[m.end():]
    if op == 11:                     # a non-ASCII byte or an escape in a value's place
        spots = [m.end() for m in re.finditer(rb"[,:]", raw)]
        if spots:
            at = rng.choice(spots)
            return raw[:at] + rng.choice((b'"\\u00e9"', "é".encode(), b"\xff", b'"\\"')) + \
                raw[at:]
    return raw.replace(b", ", b",", rng.randrange(1, 4))          # glue changed in a record


def _finish(kind: str, iou_type: str, files: dict, what: str) -> Case:
    argv = ["coco", "gt.json", "dt.json", "--iou-type", iou_type, "--json", "metrics.json"]
    oracle = {"read": "readers", "what": what, "iou_type": iou_type}
    return Case(kind, files, argv, oracle=oracle, shape="input")


def _results_case(rng: random.Random, iou_type: str) -> Case:
    gt = coco_gt(rng, iou_type)
    dt = coco_results(rng, gt, iou_type)
    if rng.random() < 0.5:
        # past the bbox reader's 2048-record probe and the keypoint reader's 16k-value chunks
        dt = _many(rng, dt, rng.choice((20, 200, 1200, 2100, 4500)))
    raw = _records_text(rng, dt)
    keys = ("image_id", "category_id", "score", "bbox", "keypoints")
    for _ in range(rng.choice((0, 1, 1, 1, 2, 3))):
        raw = _mutate_text(rng, raw, keys)
    return _finish(f"reader-{iou_type}", iou_type,
                   {"gt.json": json.dumps(gt).encode(), "dt.json": raw}, "results")


def _kpgt_case(rng: random.Random) -> Case:
    gt = coco_gt(rng, "keypoints")
    dt = coco_results(rng, gt, "keypoints")
    if rng.random() < 0.5:      # past the lists reader's 16k-value chunks
        first = gt["annotations"]
        gt["annotations"] = [dict(first[k % len(first)], id=k + 1)
                             for k in range(rng.choice((40, 400, 700)))]
    raw = json.dumps(gt, indent=rng.choice((None, 1))).encode()
    # mutate inside the keypoints lists only: the rest of the file stays valid
    for _ in range(rng.choice((0, 1, 1, 2, 3))):
        lists = [m.span() for m in re.finditer(rb'"keypoints": \[[^\[\]]*\]', raw)
                 if raw[m.start() + 14:m.start() + 15] != b'"']
        if not lists:
            break
        a, b = rng.choice(lists)
        piece = raw[a:b]
        mutated = _mutate_text(rng, piece, ("keypoints",))
        if rng.random() < 0.3 or not mutated.startswith(b'"keypoints"'):
            mutated = piece.replace(b", ", rng.choice((b",", b" , ", b",\n", b", 1e0, ")), 1)
        raw = raw[:a] + mutated + raw[b:]
    return _finish("reader-kpgt", "keypoints",
                   {"gt.json": raw, "dt.json": json.dumps(dt).encode()}, "gt")


MAKERS = {"reader-bbox": lambda rng: _results_case(rng, "bbox"),
          "reader-keypoints": lambda rng: _results_case(rng, "keypoints"),
          "reader-kpgt": _kpgt_case}


# --------------------------------------------------------------------------------------------
# The oracle (runs in the case's child, in the case's folder)


def _fingerprint(value: Any) -> Any:
    """A comparable digest of a read object: arrays by dtype, shape and bytes."""
    import numpy as np

    if isinstance(value, np.ndarray):
        if value.dtype == object:
            return ("O", value.shape, repr(value.tolist()))
        return (value.dtype.str, value.shape,
                hashlib.sha256(np.ascontiguousarray(value).tobytes()).hexdigest()[:16])
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return (type(value).__name__, tuple((f.name, _fingerprint(getattr(value, f.name)))
                                            for f in dataclasses.fields(value)))
    if isinstance(value, dict):
        return tuple(sorted((repr(k), _fingerprint(v)) for k, v in value.items()))
    if isinstance(value, (list, tuple)):
        return tuple(_fingerprint(v) for v in value)
    return repr(value)


def _differences(a: Any, b: Any, path: str = "") -> list[str]:
    if a == b:
        return []
    if (isinstance(a, tuple) and isinstance(b, tuple) and len(a) == len(b)
            and not (len(a) == 3 and isinstance(a[0], str) and a[0][:1] in "<|>O")):
        out = []
        for i, (x, y) in enumerate(zip(a, b)):
            name = x[0] if isinstance(x, tuple) and x and isinstance(x[0], str) else str(i)
            out += _differences(x, y, f"{path}.{name}")
        return out
    return [f"{path}: {str(a)[:120]} != {str(b)[:120]}"]


def _outcome(call) -> Any:
    from deteval.errors import DetevalError

    try:
        return ("ok", _fingerprint(call()))
    except (DetevalError, ValueError) as error:
        return ("error", type(error).__name__, str(error))


@contextlib.contextmanager
def _patched(pairs: list[tuple[Any, str, Any]]):
    saved = [(obj, name, getattr(obj, name)) for obj, name, _ in pairs if hasattr(obj, name)]
    try:
        for obj, name, value in pairs:
            if hasattr(obj, name):
                setattr(obj, name, value)
        yield
    finally:
        for obj, name, value in saved:
            setattr(obj, name, value)


def _modules() -> dict[str, Any]:
    import importlib

    out = {}
    for short, name in (("results", "deteval.io.coco.results"), ("typed", "deteval.io.coco.typed"),
                        ("nj", "deteval.io._numeric_json"),
                        ("nk", "deteval.io._numeric_keypoints")):
        with contextlib.suppress(ImportError):
            out[short] = importlib.import_module(name)
    return out


def _forced(mods: dict, piece: int, list_piece: int) -> list:
    """The numpy readers forced on: no size gate, no digit gate, small pieces."""
    yes = lambda *a, **k: True  # noqa: E731
    pairs = [(mods["results"], "_NUMERIC_MIN_BYTES", 0), (mods["results"], "_short_numbers", yes),
             (mods["nj"], "PIECE_BYTES", piece)]
    if "nk" in mods:
        pairs += [(mods["nk"], "short_values", yes), (mods["nk"], "PIECE_BYTES", piece),
                  (mods["nk"], "_LIST_PIECE_BYTES", list_piece)]
    return pairs


def _off(mods: dict) -> list:
    """The numpy readers switched off: the msgspec/json path reads everything."""
    none = lambda *a, **k: None  # noqa: E731
    # (the results reader imports numeric_results_columns where it is used: off at its source)
    pairs = [(mods["nj"], "numeric_results_columns", none),
             (mods["results"], "keypoint_columns_early", none),
             (mods["results"], "segm_columns_early", none)]
    if "nk" in mods:
        pairs += [(mods["nk"], "numeric_keypoint_results", none),
                  (mods["nk"], "numeric_keypoint_lists", none),
                  (mods["typed"], "_numeric_keypoint_results", none),
                  (mods["results"], "_numeric_keypoint_results", none)]
    return pairs


def reader_comparisons(oracle: dict) -> list[tuple[str, list, Any]]:
    """Both ways on ``gt.json``/``dt.json``: ``(label, [1.0], [1.0])`` when they agree, the
    differences in the label and ``[0.0]`` when not."""
    from deteval import read_coco_gt, read_coco_results
    from deteval._inputs import load_pair

    mods = _modules()
    iou_type = oracle["iou_type"]
    if oracle["what"] != "results" or iou_type == "keypoints":
        if "nk" not in mods:
            return [("keypoint reader", [1.0], "refused: no keypoint reader here")]
    from pathlib import Path

    rng = random.Random(hashlib.sha256(Path("dt.json").read_bytes()).hexdigest())
    out = []
    gt_read = lambda: read_coco_gt("gt.json", iou_type=iou_type)  # noqa: E731
    for _ in range(2):
        piece = rng.choice((1, 7, 64, 333, 4096, 1 << 20))
        threads = rng.choice((1, 2, 3))
        calls = {"read_coco_gt": gt_read,
                 "load_pair": lambda: (lambda p: (p.dataset, p.detections))(
                     load_pair("gt.json", "dt.json", iou_type=iou_type))}
        if oracle["what"] == "results":
            calls["read_coco_results"] = lambda t=threads: read_coco_results(
                "dt.json", read_coco_gt("gt.json", iou_type=iou_type), iou_type=iou_type,
                threads=t)
        for label, call in calls.items():
            with _patched(_forced(mods, piece, piece)):
                fast = _outcome(call)
            with _patched(_off(mods)):
                slow = _outcome(call)
            tag = f"{label} pieces {piece} threads {threads}"
            if fast == slow:
                out.append((tag, [1.0], [1.0]))
            else:
                diff = "; ".join(_differences(fast, slow)[:3]) or f"{fast} != {slow}"
                out.append((f"{tag}: numpy reader vs fallback: {diff}"[:1500], [0.0], [1.0]))
    return out
