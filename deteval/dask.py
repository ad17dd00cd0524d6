"""Evaluate sharded results on a Dask cluster: read and match on the workers, merge states.

Each shard (a results file, a partition of a dask bag of COCO result records, or a partition
of a dask dataframe) is read and matched on a worker into an :class:`~deteval.Evaluator`
state; the states, not the detections, travel, and are merged in a tree
(:meth:`~deteval.Evaluator.merge_bytes`); the client accumulates the last one. The result is
the one :func:`~deteval.evaluate_coco` gives for all the detections at once, to the last bit
(:func:`~deteval.evaluate_voc` with the streaming order of equal scores: see
:class:`~deteval.Evaluator`).

Shards must split the detections by image: an image whose detections are spread over two
shards is an error naming it (an image repeated with identical detections counts once).

Needs the ``dask`` extra: ``pip install 'deteval[dask]'`` (dask and distributed).
"""

from __future__ import annotations

import os
import uuid
from typing import Any

import numpy as np

from .data import Dataset
from .io.coco import read_coco_gt, read_coco_results
from .streaming import Evaluator

__all__ = ["evaluate"]

_EXTRA = "deteval.dask needs dask and distributed: pip install 'deteval[dask]'"

#: Evaluators (ground truth read and prepared) of this worker process, by evaluation token.
_TEMPLATES: dict[str, Evaluator] = {}
_KEPT_TEMPLATES = 4


def _require_dask() -> Any:
    try:
        import dask
        import dask.delayed  # noqa: F401
    except ImportError as error:
        raise ImportError(f"{_EXTRA} ({error})") from None
    return dask


def _template(token: str, gt: Any, config: dict) -> Evaluator:
    """This process's evaluator for ``token`` (the ground truth is read once per worker)."""
    evaluator = _TEMPLATES.get(token)
    if evaluator is None:
        while len(_TEMPLATES) >= _KEPT_TEMPLATES:
            _TEMPLATES.pop(next(iter(_TEMPLATES)))
        evaluator = Evaluator(gt, unknown_labels="drop", **config)
        _TEMPLATES[token] = evaluator
    return evaluator


def shard_state(token: str, gt: Any, config: dict, shard: Any) -> bytes:
    """Read and match one shard; its state as bytes (a task run on a worker).

    ``shard``: a results file path, a list of COCO result records, or a pandas DataFrame
    with columns ``image_id``, ``category_id``, ``score`` and ``bbox`` or ``x, y, w, h``.
    """
    template = _template(token, gt, config)
    evaluator = template.blank()
    if isinstance(shard, (str, os.PathLike)):
        evaluator.update(read_coco_results(shard, template.gt, iou_type=config["iou_type"]))
    elif hasattr(shard, "columns"):
        evaluator.update(_frame_rows(shard))
    else:
        evaluator.update(list(shard))
    return evaluator.to_bytes()


def merge_states(token: str, gt: Any, config: dict, *parts: bytes) -> bytes:
    """Merge states (bytes) into one (a task run on a worker)."""
    return _template(token, gt, config).blank().merge_bytes(*parts).to_bytes()


def _frame_rows(frame: Any) -> np.ndarray:
    """A dataframe partition as (N, 7) rows [image_id, x, y, w, h, score, category_id]."""
    columns = set(frame.columns)
    if {"x", "y", "w", "h"} <= columns:
        xywh = np.column_stack([np.asarray(frame[c], dtype=np.float64) for c in "xywh"])
    elif "bbox" in columns:
        boxes = list(frame["bbox"])
        if boxes and isinstance(boxes[0], str):     # dask's string conversion of lists
            import orjson

            boxes = [orjson.loads(box) for box in boxes]
        xywh = np.array(boxes, dtype=np.float64).reshape(-1, 4)
    else:
        raise ValueError("a results dataframe needs columns image_id, category_id, score and "
                         f"bbox (or x, y, w, h); got {sorted(columns)}")
    return np.column_stack([np.asarray(frame["image_id"], dtype=np.float64), xywh,
                            np.asarray(frame["score"], dtype=np.float64),
                            np.asarray(frame["category_id"], dtype=np.float64)])


def _client(client: Any) -> tuple[Any, bool]:
    """(client or None for dask's default scheduler, whether this call owns it)."""
    if client is None:
        try:
            from distributed import get_client
            return get_client(), False
        except (ImportError, ValueError):
            return None, False
    if isinstance(client, str):
        try:
            from distributed import Client, LocalCluster
        except ImportError as error:
            raise ImportError(f"{_EXTRA} ({error})") from None
        if client == "local":
            return Client(LocalCluster(processes=True, dashboard_address=None)), True
        return Client(client), True
    return client, False


def _shards(dask: Any, results: Any) -> list:
    """Delayed shards: file paths as they are, bag and dataframe partitions."""
    if isinstance(results, (str, os.PathLike)):
        return [results]
    if hasattr(results, "to_delayed") and hasattr(results, "npartitions"):
        return list(results.to_delayed())
    if isinstance(results, (list, tuple)):
        return list(results)
    raise TypeError(f"results must be a list of results files, a dask bag or a dask "
                    f"dataframe; got {type(results).__name__}")


def evaluate(gt: Any, results: Any, *, client: Any = None, protocol: str = "coco",
             iou_type: str = "bbox", split_every: int = 4, **params: Any):
    """Evaluate sharded results on Dask; equal to the one-process evaluation bit for bit.

    Parameters
    ----------
    gt : str, PathLike, dict or Dataset
        The ground truth. A path is read once by each worker (it must see the same file);
        a dict or Dataset is sent to every worker once.
    results : list of str or PathLike, dask.bag.Bag or dask.dataframe.DataFrame
        Results files (one shard each), a bag of COCO result records, or a dataframe with
        columns ``image_id``, ``category_id``, ``score`` and ``bbox`` (or ``x, y, w, h``);
        each partition one shard. Shards must split the detections by image.
    client : distributed.Client, str or None
        The cluster: a client, a scheduler address, ``"local"`` (a ``LocalCluster`` started
        and closed for this call), or None: the current client if there is one, else dask's
        default scheduler in this process.
    protocol, iou_type, **params
        As for :class:`~deteval.Evaluator` (``"coco"`` or a VOC preset, and settings).
        Results of a category not in the ground truth are dropped, as pycocotools does.
    split_every : int
        How many states a merge task takes (the fan-in of the reduction tree).

    Returns
    -------
    COCOResult or VOCResult
        With ``matches`` and ``detections`` None.

    Raises
    ------
    ImportError
        dask or distributed missing (install the ``deteval[dask]`` extra).
    """
    dask = _require_dask()
    if split_every < 2:
        raise ValueError(f"split_every must be at least 2; got {split_every}")
    config = {"protocol": protocol, "iou_type": iou_type, **params}
    local = gt if isinstance(gt, Dataset) else (
        read_coco_gt(gt, iou_type=iou_type) if not isinstance(gt, (str, os.PathLike)) else None)
    # Fails here, on the client, for bad settings or ground truth.
    evaluator = Evaluator(local if local is not None else gt, unknown_labels="drop", **config)
    client, owned = _client(client)
    try:
        gt_ref: Any = str(gt) if local is None else evaluator.gt
        if client is not None and local is not None:
            gt_ref = client.scatter(evaluator.gt, broadcast=True, hash=False)
        token = uuid.uuid4().hex
        states = [dask.delayed(shard_state, pure=False)(token, gt_ref, config, shard)
                  for shard in _shards(dask, results)]
        if not states:
            return evaluator.compute()
        while len(states) > 1:
            states = [dask.delayed(merge_states, pure=False)(token, gt_ref, config,
                                                             *states[i:i + split_every])
                      for i in range(0, len(states), split_every)]
        final = (client.compute(states[0]).result() if client is not None
                 else dask.compute(states[0])[0])
    finally:
        if owned:
            cluster = getattr(client, "cluster", None)
            client.close()
            if cluster is not None:
                cluster.close()
    return evaluator.merge_bytes(final).compute()
