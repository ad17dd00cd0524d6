"""Coverage of deteval's image-bootstrap intervals on a synthetic detector (issue 15 item 4).

A synthetic "world" draws images independently: each has a Poisson number of objects of three
classes and sizes, the detector finds each object with some probability (a box jittered
around it, a score that grows with its quality) and adds Poisson false positives with lower
scores. The population value of each number (AP, AP50, AP75, AR100, F1, per-class AP) is
approximated by evaluating one very large draw (``--truth-images``). Then ``--trials``
independent test sets of ``--images`` images are drawn; each gets its percentile interval
(``--resamples``, ``--confidence``), and the script counts how often the interval holds the
population value. Printed: the population values, the coverage and mean width of each
interval, the mean bias of the test-set estimates, and for comparison the coverage of the
"basic" bootstrap interval (the percentile interval reflected about the estimate).

    python scripts/bootstrap_coverage.py --trials 200 --images 300 --resamples 400

The figures of docs/diagnostics/bootstrap.md §8 come from this script.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

NUMBERS = ("AP", "AP50", "AP75", "AR100", "F1")
CLASSES = ("a", "b", "c")


def world(seed: int, n_images: int, *, first_id: int = 1) -> tuple[dict, list[dict]]:
    """``n_images`` independent images of the synthetic world: a COCO dict and results."""
    rng = np.random.default_rng(seed)
    images, annotations, results = [], [], []
    for image_id in range(first_id, first_id + n_images):
        images.append({"id": image_id, "width": 640, "height": 480})
        for _ in range(rng.poisson(3.0)):
            k = int(rng.choice(3, p=[0.5, 0.3, 0.2]))
            side = float(np.exp(rng.uniform(np.log(12), np.log(200))))
            x, y = rng.uniform(0, 640 - side), rng.uniform(0, 480 - side)
            annotations.append({"id": len(annotations) + 1, "image_id": image_id,
                                "category_id": k + 1, "bbox": [x, y, side, side],
                                "area": side * side, "iscrowd": 0})
            if rng.random() < 0.55 + 0.15 * k:       # classes differ in difficulty
                noise = rng.uniform(0.0, 0.3) * side
                quality = 1.0 - noise / (0.3 * side)
                results.append({"image_id": image_id, "category_id": k + 1,
                                "bbox": [x + rng.normal(0, noise / 2), y + rng.normal(0, noise / 2),
                                         side * np.exp(rng.normal(0, 0.1)),
                                         side * np.exp(rng.normal(0, 0.1))],
                                "score": float(np.clip(0.3 + 0.5 * quality
                                                       + rng.normal(0, 0.15), 0.01, 1.0))})
        for _ in range(rng.poisson(2.0)):
            side = float(np.exp(rng.uniform(np.log(12), np.log(200))))
            results.append({"image_id": image_id, "category_id": int(rng.integers(1, 4)),
                            "bbox": [rng.uniform(0, 640 - side), rng.uniform(0, 480 - side),
                                     side, side],
                            "score": float(np.clip(rng.normal(0.35, 0.15), 0.01, 1.0))})
    categories = [{"id": i + 1, "name": n} for i, n in enumerate(CLASSES)]
    return {"images": images, "annotations": annotations, "categories": categories}, results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trials", type=int, default=200)
    parser.add_argument("--images", type=int, default=300)
    parser.add_argument("--resamples", type=int, default=400)
    parser.add_argument("--confidence", type=float, default=0.95)
    parser.add_argument("--truth-images", type=int, default=100_000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)

    import deteval

    started = time.perf_counter()
    gt, dt = world(10_000 + args.seed, args.truth_images)
    truth_result = deteval.evaluate_coco(gt, dt)
    names = NUMBERS + tuple(f"AP[{n}]" for n in CLASSES)
    ci0 = deteval.bootstrap_coco(truth_result, n_resamples=1, seed=0)
    truth = np.array([ci0.estimate(n) for n in names])
    print(f"population ({args.truth_images} images): "
          + ", ".join(f"{n} {v:.4f}" for n, v in zip(names, truth)), flush=True)
    hits = np.zeros(len(names))
    basic_hits = np.zeros(len(names))
    widths = np.zeros(len(names))
    bias = np.zeros(len(names))
    for trial in range(args.trials):
        gt, dt = world(args.seed * 1_000_003 + trial, args.images)
        ci = deteval.bootstrap_coco(deteval.evaluate_coco(gt, dt), n_resamples=args.resamples,
                                    confidence=args.confidence, seed=trial)
        low = np.array([ci.interval(n)[0] for n in names])
        high = np.array([ci.interval(n)[1] for n in names])
        estimate = np.array([ci.estimate(n) for n in names])
        hits += (low <= truth) & (truth <= high)
        # For comparison: the "basic" interval, the percentile one reflected about the
        # estimate (2 x - high, 2 x - low), which corrects the bootstrap's own bias.
        basic_hits += (2 * estimate - high <= truth) & (truth <= 2 * estimate - low)
        widths += high - low
        bias += estimate - truth
        if (trial + 1) % 10 == 0:
            print(f"  after {trial + 1} sets: coverage of AP {hits[0] / (trial + 1):.3f}",
                  flush=True)
    print(f"{args.trials} test sets of {args.images} images, {args.resamples} resamples, "
          f"{100 * args.confidence:g}% percentile intervals "
          f"({time.perf_counter() - started:.0f} s):")
    print(f"{'number':<8} {'coverage':>9} {'mean width':>11} {'mean bias':>10} "
          f"{'basic coverage':>15}")
    for i, name in enumerate(names):
        print(f"{name:<8} {hits[i] / args.trials:9.3f} {widths[i] / args.trials:11.4f} "
              f"{bias[i] / args.trials:+10.4f} {basic_hits[i] / args.trials:15.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
