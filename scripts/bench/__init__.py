"""Benchmark deteval against pycocotools, faster-coco-eval, hotcoco, ultrafast-pycocotools and
vernier on the same files.

A deterministic, COCO-scale synthetic data set is generated once (seeded numpy) and cached:
by default 5,000 images, 80 categories, about 36k ground-truth objects with a COCO-like size
mix (~41% small, ~34% medium, ~24% large, ~1% crowd) and 100 detections per image (500k).
Every tool then evaluates the same ``gt.json`` and ``results.json`` in a fresh subprocess per
run, from the files to the 12 COCO bbox stats, so import cost and peak memory belong to one
tool alone. The report gives, per tool: the median and minimum end-to-end time (files to
stats, import excluded), the median of each phase the tool lets us separate, CPU time, peak
RSS, the ratio to deteval, the time per detection, and the largest difference between its
stats and pycocotools'.

``--case`` picks what is evaluated (default bbox; ``all`` runs every case in turn); each case is
described in its module under ``cases/``: ``bbox``, ``segm`` (polygons and RLE; the report says
whether deteval is >= 5x faster than pycocotools, issue 3), ``keypoints`` (OKS) and ``rotated``
(deteval only, with a naive shapely loop as the IoU step's baseline); and cases of another
kind: ``compat`` (deteval.compat's pycocotools API against evaluate_coco, on the bbox data),
``streaming`` (peak memory of Evaluator updates against one evaluation, 2M detections),
``dask`` (8 results shards, one process against a LocalCluster, and the state bytes each shard
sends), ``lvis`` (against lvis-api and hotcoco's LVISeval) and ``openimages`` (against the
literal reference of tests/oid_reference.py); each checks that the numbers agree. A peer
that does not evaluate a case's iou_type is reported "n/a". Every tool's stats must agree with
pycocotools' to 1e-12 (the report prints a MISMATCH line otherwise; for bbox they are equal
to the last bit).

``--detections N [N ...]`` sets the size by the total number of detections instead of images
(``--detections 2000000``: 20k images at 100 per image) and, with several N, runs the case at
each size and ends with a scaling table: median time, time per detection and peak memory.

Usage (from the repository root, with the dev venv)::

    python scripts/bench.py                        # full size, every tool (~2 min)
    python scripts/bench.py --quick                # 500 images, every tool runs --repeat times
    python scripts/bench.py --tools deteval hotcoco --repeat 5
    python scripts/bench.py --images 2000 --dets-per-image 50 --seed 7 --data-dir /tmp/bench
    python scripts/bench.py --case segm            # or keypoints, rotated, compat, lvis...
    python scripts/bench.py --case dask --quick    # 2,000 images in 8 shards
    python scripts/bench.py --case all             # every case (~5 min, ~1.5 min more
                                                   # the first time, to generate the data)
    python scripts/bench.py --detections 100000 500000 2000000 --tools deteval hotcoco
    python -m scripts.bench --quick                # the same, as a module

Options of note: ``--repeat`` (default 3) runs per tool; ``--repeat-slow`` (default 1, or
``--repeat`` with ``--quick``) runs for the slow tools pycocotools and faster-coco-eval, whose
full-size runs take about 70 s and 13 s; ``--data-dir`` (default ./bench-data/) holds the
generated files (~50 MB, ~12 s to make), reused when the same parameters and seed were written
before. ``--images``, ``--categories`` and ``--dets-per-image`` replace the defaults of every
case run; ``--quick`` shrinks each case (bbox and keypoints 500 images, segm 100, rotated 200).

Peak memory is ``ru_maxrss`` of the child. Linux carries the parent's resident memory into a
child's ``ru_maxrss``, so the data is generated in a child too and this process stays ~20 MB;
the report prints that floor.

A tool that is not installed or fails is reported as such and the others still run.
deteval is imported from the source tree this script belongs to. Nothing here asserts on
timings: the figures depend on the machine, which is described at the top of the report.

The package, by job: ``cli`` (options, runs, round robin), ``cases/`` (the registry and one
module per case: its generator, its description, its defaults; see ``cases/__init__`` for how
to add one), ``peers/`` (one module per tool: how it is run and its phases timed), ``child``
(one run of one tool in a fresh process), ``data`` (the cache of generated files), ``report``
(the tables), ``machine`` (where the figures come from) and ``common`` (what they share). Every
module imports only the standard library at the top, so that a child measures the import of
numpy as part of the tool it runs.
"""
