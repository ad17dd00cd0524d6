"""The shared voc_sample_100: every detection layout gives the same VOC AP per class and mAP,
whatever the ground-truth format it is evaluated against."""

from __future__ import annotations

import numpy as np
import pytest

import deteval

LAYOUTS = {
    "coco": ("dets/coco_format/coco_dets.json", {}),
    "abs-xywh": ("dets/abs_xywh", {"box_format": "xywh"}),
    "abs-xyxy": ("dets/abs_xyx2y2", {"box_format": "xyxy"}),
    "rel-cxcywh": ("dets/rel_xywh", {"box_format": "cxcywhn"}),
}


def _detections(voc_sample_dir, dataset, layout):
    path, options = LAYOUTS[layout]
    if options:
        options = {**options, "names": voc_sample_dir / "voc.names"}
    return deteval.read_detections(voc_sample_dir / path, dataset, **options)


@pytest.mark.parametrize("preset", ["VOC2007", "VOC2012"])
@pytest.mark.parametrize("gt_path", ["gts/pascalvoc_format", "gts/coco_format_v2/instances_v2.json",
                                     "gts/labelme_format", "gts/cvat_format/annotations.xml"],
                         ids=["voc-xml", "coco", "labelme", "cvat"])
def test_every_detection_layout_gives_the_same_ap(voc_sample_dir, preset, gt_path):
    dataset = deteval.read_gt(voc_sample_dir / gt_path)
    params = getattr(deteval, preset)
    results = {name: deteval.evaluate_voc(dataset, _detections(voc_sample_dir, dataset, name),
                                          params=params)
               for name in LAYOUTS}
    reference = results["coco"]
    assert 0.5 < reference.mean_ap < 0.7
    for name, result in results.items():
        np.testing.assert_array_equal(result.ap, reference.ap, err_msg=name)
        assert result.mean_ap == reference.mean_ap, name


def test_a_cvat_folder_is_named_as_such(voc_sample_dir):
    with pytest.raises(deteval.FormatError, match="holds a CVAT file"):
        deteval.read_gt(voc_sample_dir / "gts" / "cvat_format")
