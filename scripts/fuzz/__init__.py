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
commands
    Cases of every command and of the options added after the first run (compare and its
    regression gate, crowdpose, calibration, coco/voc --slice/--ci/--table/--threads,
    report GT A B, draw with every --iou-type, errors, check, lvis, openimages): well
    formed, malformed, or with one bad option value, each with the exit statuses it allows,
    what its error must name and the outputs it must write.
oracles
    pycocotools on the same COCO files: the stats of ``coco``, each model's estimates of
    ``compare``, each image slice.
runner
    Runs the cases and checks them: no traceback, no signal, no hang, memory bounded by the
    input's size, inputs left unchanged, errors naming a file (or the bad option), exit
    statuses the case allows, no file left by a failed run (nor a temporary one), and
    pycocotools' numbers wherever pycocotools accepts the same COCO input.
"""
