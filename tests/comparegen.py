"""Degraded copies of a detector's results for the paired-comparison tests
(``tests/test_cli_compare.py``, ``tests/test_compare_protocols.py``): the same detections,
localised worse and ranked worse, so that a paired comparison should find the copy
significantly worse than the original."""

from __future__ import annotations

import numpy as np

__all__ = ["degraded", "degraded_rows"]


def _shuffle_scores(rng: np.random.Generator, scores: list) -> list:
    """The scores with those of a random 20% of the entries shuffled among them."""
    scores = list(scores)
    chosen = rng.choice(len(scores), len(scores) // 5, replace=False)
    picked = [scores[i] for i in chosen]
    rng.shuffle(picked)
    for i, s in zip(chosen, picked):
        scores[i] = s
    return scores


def degraded(results: list[dict], seed: int = 0) -> list[dict]:
    """COCO-format results: boxes jittered by a tenth of their size (keypoints by a tenth
    of the spread of their coordinates), the scores of 20% of them shuffled."""
    rng = np.random.default_rng(seed)
    out = []
    for d in results:
        d = dict(d)
        if "bbox" in d:
            x, y, w, h = d["bbox"]
            s = 0.1 * max(w, h)
            d["bbox"] = [x + rng.normal(0, s), y + rng.normal(0, s), w, h]
        if "keypoints" in d:
            kp = np.asarray(d["keypoints"], dtype=np.float64).reshape(-1, 3)
            s = 0.1 * max(np.ptp(kp[:, 0]), np.ptp(kp[:, 1]), 1.0)
            kp[:, :2] += rng.normal(0, s, (len(kp), 2))
            d["keypoints"] = kp.ravel().tolist()
        out.append(d)
    return [dict(d, score=s) for d, s in zip(out, _shuffle_scores(rng, [d["score"] for d in out]))]


def degraded_rows(rows: list[tuple], seed: int = 0) -> list[tuple]:
    """Open Images detection rows ``(image, label, score, xmin, xmax, ymin, ymax)``: the same
    treatment (box corners jittered by a tenth of the box size)."""
    rng = np.random.default_rng(seed)
    out = []
    for image, label, score, x0, x1, y0, y1 in rows:
        s = 0.1 * max(x1 - x0, y1 - y0)
        dx, dy = rng.normal(0, s, 2)
        out.append((image, label, score, x0 + dx, x1 + dx, y0 + dy, y1 + dy))
    scores = _shuffle_scores(rng, [r[2] for r in out])
    return [r[:2] + (s,) + r[3:] for r, s in zip(out, scores)]
