"""deteval's fuzz harness (issue 19): structure-aware input generators and a runner that
drives the command line, one forked child per input, under a timeout and a memory limit.

Not library code: it lives under ``scripts/`` and is run by ``scripts/fuzz.py`` (long runs)
and ``tests/test_fuzz.py`` (a fast seeded subset).

Modules
-------
mutate
    The seeded mutators: JSON trees (deleted keys, changed types, huge/negative/NaN numbers,
    deep nesting, duplicated ids, wrong shapes), bytes (bad encodings, truncation) and text
    lines (other scripts' digits, underscores, NUL, missing and extra fields).
generators
    Seed inputs (COCO ground truth and bbox/segm/keypoints results, VOC XML, YOLO, txt, CSV,
    Open Images, DOTA) and the cases built from them: files, command line, oracle, special
    paths (FIFO, /dev/zero, folders, outputs that are inputs).
runner
    Runs the cases and checks them: no traceback, no signal, no hang, memory bounded by the
    input's size, inputs left unchanged, errors naming a file, and pycocotools' 12 stats
    wherever pycocotools accepts the same COCO input.
"""
