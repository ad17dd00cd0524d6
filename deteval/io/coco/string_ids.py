"""String image and category ids, as pycocotools takes them (they are dict keys there).

When every image id (or every category id) of a ground-truth file is a string, the ids are
numbered ``1..n`` in sorted string order, the order in which ``COCOeval`` sorts them (so the
ties between images break the same way), and the strings are kept on the
:class:`~deteval.data.Dataset` (``string_ids``) for the results to be numbered alike. A mix of
strings and numbers among the ids of one kind is refused, naming a record of each.

Examples
--------
>>> gt = {"images": [{"id": "b"}, {"id": "a"}], "categories": [{"id": 1, "name": "x"}],
...       "annotations": [{"id": 1, "image_id": "b", "category_id": 1, "bbox": [0, 0, 1, 1]}]}
>>> data, strings = number_string_ids(gt, "gt.json")
>>> [i["id"] for i in data["images"]], data["annotations"][0]["image_id"], strings
([2, 1], 2, {'image': ('a', 'b')})
"""

from __future__ import annotations

from typing import Any

from ...errors import FormatError

__all__ = ["number_result_ids", "number_string_ids"]

# (table, id key of the table, key in the records that refers to it)
_KINDS = (("images", "image", "image_id"), ("categories", "category", "category_id"))


def _is_string(value: Any) -> bool:
    return isinstance(value, str)


def _check_not_mixed(records: list, key: str, section: str, name: str) -> bool:
    """True when every ``record[key]`` is a string, False when none is; else an error."""
    first_string = next((i for i, r in enumerate(records)
                         if isinstance(r, dict) and _is_string(r.get(key))), None)
    if first_string is None:
        return False
    other = next((i for i, r in enumerate(records)
                  if isinstance(r, dict) and not _is_string(r.get(key))), None)
    if other is not None:
        raise FormatError(
            f"'{key}' mixes strings and numbers: {section}[{first_string}] has "
            f"{records[first_string][key]!r}, {section}[{other}] has "
            f"{records[other].get(key)!r}; ids of one kind must be all numbers or all "
            "strings", source=name, record=f"{section}[{other}]")
    return True


def number_string_ids(data: Any, name: str) -> tuple[Any, dict[str, tuple[str, ...]]]:
    """An instances dict with string image/category ids numbered (a shallow copy), and the
    strings of each kind renumbered, in id order (``{"image": (...), "category": (...)}``)."""
    if not isinstance(data, dict):
        return data, {}
    strings: dict[str, tuple[str, ...]] = {}
    annotations = data.get("annotations")
    for table, kind, ref in _KINDS:
        records = data.get(table)
        if not isinstance(records, list) or not _check_not_mixed(records, "id", table, name):
            continue
        ordered = tuple(sorted({r["id"] for r in records if isinstance(r, dict)}))
        number = {s: i + 1 for i, s in enumerate(ordered)}
        data = {**data, table: [{**r, "id": number[r["id"]]} if isinstance(r, dict) else r
                                for r in records]}
        if isinstance(annotations, list):
            annotations = _renumber(annotations, ref, number, "annotations", name,
                                    unknown=f"'{table}'")
            data["annotations"] = annotations
        strings[kind] = ordered
    if isinstance(annotations, list):
        for _, kind, ref in _KINDS:
            if kind not in strings:
                _refuse_strings(annotations, ref, "annotations", name, "ground truth's")
    return data, strings


def _renumber(records: list, key: str, number: dict, section: str, name: str, *,
              unknown: int | str) -> list:
    """``records`` with ``record[key]`` numbered; a string not in ``number`` is an error
    naming ``unknown`` (the table it is missing from), or takes the number ``unknown``."""
    out = []
    for i, record in enumerate(records):
        if isinstance(record, dict) and key in record:
            value = record[key]
            if not _is_string(value):
                raise FormatError(f"'{key}' must be a string like the ids it refers to; got "
                                  f"{value!r}", source=name, record=f"{section}[{i}]")
            if value not in number and isinstance(unknown, str):
                raise FormatError(f"{key} {value!r} is not in {unknown}", source=name,
                                  record=f"{section}[{i}]")
            record = {**record, key: number.get(value, unknown)}
        out.append(record)
    return out


def _refuse_strings(records: list, key: str, section: str, name: str, whose: str) -> None:
    bad = next((i for i, r in enumerate(records)
                if isinstance(r, dict) and _is_string(r.get(key))), None)
    if bad is not None:
        raise FormatError(f"'{key}' is the string {records[bad][key]!r} but the {whose} ids "
                          "of this kind are numbers", source=name, record=f"{section}[{bad}]")


def number_result_ids(records: Any, strings: dict[str, tuple[str, ...]], name: str) -> Any:
    """Results records with string ids numbered as the ground truth's (``strings``); the
    records as they are when no id is a string."""
    container = None
    if isinstance(records, dict) and isinstance(records.get("annotations"), list):
        container, records = records, records["annotations"]
    if not isinstance(records, list) or not records:
        return records if container is None else container
    section = "results" if container is None else "annotations"
    given = records
    for kind, ref in (("image", "image_id"), ("category", "category_id")):
        if kind in strings:
            if not _check_not_mixed(records, ref, section, name):
                bad = next(i for i, r in enumerate(records) if isinstance(r, dict))
                raise FormatError(f"'{ref}' is the number {records[bad].get(ref)!r} but the "
                                  "ground truth's ids of this kind are strings", source=name,
                                  record=f"{section}[{bad}]")
            number = {s: i + 1 for i, s in enumerate(strings[kind])}
            # An unknown image is an error (loadRes asserts); an unknown category gets
            # id 0, which no ground-truth category has: its results are dropped.
            records = _renumber(records, ref, number, section, name,
                                unknown="the ground truth's images" if kind == "image"
                                else 0)
        else:
            _refuse_strings(records, ref, section, name, "ground truth's")
    if records is given:
        return given if container is None else container
    return records if container is None else {**container, "annotations": records}
