"""deteval, imported from the source tree this script belongs to."""

from __future__ import annotations

from ..common import use_source_tree
from . import Peer, register


def run(gt_path: str, dt_path: str, timer, iou_type: str = "bbox"):
    use_source_tree()
    with timer("import"):
        from deteval import evaluate_coco  # imported on first use: import it here
        from deteval.io.coco import read_coco_gt, read_coco_results
    if iou_type == "bbox":
        # What a user calls: evaluate_coco reads the results file while it parses the
        # ground truth (docs/fast-reader.md §4b), so the two reads are one phase here;
        # result.timings splits load / match / accumulate.
        with timer("evaluate"):
            result = evaluate_coco(gt_path, dt_path)
        return result.stats, {k: float(v) for k, v in result.timings.items()}
    # evaluate_coco(gt_path, dt_path, iou_type=...) reads the two files exactly so; reading
    # them here first only splits its time into the phases of the table. A keypoint results
    # file is parsed on a thread while the ground truth is read (load_pair), a segm one's
    # bytes are read so, which separate calls cannot do: the call a user makes is timed whole.
    shape = {"iou_type": iou_type}
    if iou_type in ("keypoints", "segm"):
        with timer("evaluate"):
            result = evaluate_coco(gt_path, dt_path, **shape)
        inner = {k: float(v) for k, v in (getattr(result, "timings", None) or {}).items()}
        return result.stats, inner
    with timer("load_gt"):
        dataset = read_coco_gt(gt_path, **shape)
    with timer("load_dt"):
        detections = read_coco_results(dt_path, dataset, **shape)
    with timer("evaluate"):  # matching, accumulation and the stats in one call
        result = evaluate_coco(dataset, detections, **shape)
    inner = {k: float(v) for k, v in (getattr(result, "timings", None) or {}).items()}
    return result.stats, inner


register(Peer(
    "deteval", "deteval", "deteval", run, iou_types=frozenset({"bbox", "segm", "keypoints",
                                                               "rotated"}),
    note=("bbox, segm and keypoints: evaluate = evaluate_coco(gt_path, dt_path), files to the "
          "stats (the results file is read while the ground truth is read); other cases: "
          "evaluate = evaluate_coco(), matching to the stats."),
))  # fmt: skip
