"""MatchTable.to_csv against the table's own dense views, line by line.

``to_csv`` builds its text column by column from the sparse matches (no dense status array);
the reference here is written row by row from ``detection_status`` and ``detection_matches``
with Python's csv module conventions: ``detection,repr(threshold),STATUS,gt`` with an empty
``gt`` when unmatched. Tables come from seeded COCO datasets (crowds, ignored objects, area
ranges, more than max_detections per group), every area range, and chunks of rows cut
through a detection's lines.
"""

import pytest
from cocogen import make_dataset

import deteval._csv_text as csv_text
from deteval import evaluate_coco

_NAMES = {-1: "NOT_EVALUATED", 0: "FP", 1: "TP", 2: "IGNORED"}


def _reference(table, area_index):
    status = table.detection_status(area_index)
    matches = table.detection_matches(area_index)
    lines = ["detection,iou_threshold,status,gt"]
    for d in range(table.n_detections):
        for t, threshold in enumerate(table.iou_thresholds.tolist()):
            gt = matches[t, d]
            lines.append(f"{d},{threshold!r},{_NAMES[int(status[t, d])]},"
                         f"{gt if gt >= 0 else ''}")
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("seed", [0, 1])
def test_to_csv_equals_the_dense_views(seed, monkeypatch, tmp_path):
    gt, results = make_dataset(seed, n_images=12, n_categories=4, max_dt=10)
    table = evaluate_coco(gt, results, max_detections=(1, 3, 5)).matches
    assert (~table.dt_kept & (table.dt_rank >= 0)).any()      # NOT_EVALUATED rows exist
    for area_index in range(len(table.area_ranges)):
        expected = _reference(table, area_index)
        assert table.to_csv(area_index=area_index) == expected
        # Chunks of 7 lines: a detection's 10 lines fall into two chunks.
        monkeypatch.setattr(csv_text, "_CHUNK_ROWS", 7)
        path = tmp_path / f"matches{area_index}.csv"
        assert table.to_csv(path, area_index=area_index) == expected
        assert path.read_bytes() == expected.encode()
        monkeypatch.undo()


def test_to_csv_of_an_empty_table():
    gt, _ = make_dataset(0, n_images=3, n_categories=2)
    table = evaluate_coco(gt, []).matches
    assert table.to_csv() == "detection,iou_threshold,status,gt\n"
