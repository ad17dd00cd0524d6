"""Merge the evaluators of all ranks of a distributed job (DDP and the like).

Each rank updates its own :class:`~deteval.Evaluator` with its shard of the images;
:func:`gather` ships every rank's state (:meth:`~deteval.Evaluator.to_bytes`: the match
state, not the detections) to every rank, or to one, and merges them. Images a
``DistributedSampler`` repeated to even out the shards count once (a
:class:`~deteval.DuplicateImageWarning` says how many).

deteval does not depend on torch: ``torch.distributed`` is used when the program has already
imported and initialised it; otherwise pass ``all_gather``, any function that takes a
picklable object and returns the list of every rank's object in rank order (an MPI
``allgather``, a ``multiprocessing`` pipe, ...).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from typing import Any

from .streaming import Evaluator

__all__ = ["gather"]


def _torch_distributed() -> Any:
    """``torch.distributed`` if the program imported and initialised it, else None.

    Looked up in ``sys.modules``: a process that never imported it cannot have initialised
    it, and importing torch only to find that out would cost seconds."""
    dist = sys.modules.get("torch.distributed")
    if dist is None or not dist.is_available() or not dist.is_initialized():
        return None
    return dist


def gather(evaluator: Evaluator, all_gather: Callable[[Any], list] | None = None,
           dst: int | None = None) -> Evaluator | None:
    """The merge of every rank's evaluator, on every rank or on rank ``dst`` only.

    Call it on every rank (it is a collective operation).

    Parameters
    ----------
    evaluator : Evaluator
        This rank's evaluator; not modified.
    all_gather : callable, optional
        ``all_gather(obj) -> [obj_rank0, obj_rank1, ...]``; used when ``torch.distributed``
        is not initialised in this process.
    dst : int, optional
        Rank that receives the merge (``torch.distributed.gather_object``); the others get
        None. Default: every rank gets it (``all_gather_object``).

    Returns
    -------
    Evaluator or None
        A new evaluator holding every rank's state; ``.compute()`` gives the result of all.

    Raises
    ------
    RuntimeError
        Neither ``torch.distributed`` is initialised nor ``all_gather`` given.
    DetevalError
        Two ranks evaluated the same image with different detections.

    Examples
    --------
    One process (a list of one is every rank's state):

    >>> gt = {"images": [{"id": 1}], "categories": [{"id": 1}],
    ...       "annotations": [{"id": 1, "image_id": 1, "category_id": 1,
    ...                        "bbox": [0, 0, 10, 10], "area": 100, "iscrowd": 0}]}
    >>> evaluator = Evaluator(gt)
    >>> evaluator.update({1: {"boxes": [[0, 0, 10, 10]], "scores": [0.9], "labels": [1]}})
    >>> merged = gather(evaluator, all_gather=lambda obj: [obj])
    >>> float(merged.compute().stats[0])
    1.0
    """
    if not isinstance(evaluator, Evaluator):
        raise TypeError(f"gather() takes an Evaluator; got {type(evaluator).__name__}")
    payload = evaluator.to_bytes()
    dist = _torch_distributed()
    if dist is not None:
        parts = _torch_gather(dist, payload, dst)
    elif all_gather is not None:
        # A token of our own tells which entry of the gathered list is this rank's.
        token = os.urandom(16)
        gathered = all_gather((token, payload))
        if dst is not None and not 0 <= dst < len(gathered):
            raise ValueError(f"dst must be a rank in 0..{len(gathered) - 1}; got {dst}")
        if dst is not None and gathered[dst][0] != token:
            return None
        parts = [part for _, part in gathered]
    else:
        raise RuntimeError("gather() needs torch.distributed initialised in this process, or "
                           "an all_gather callable (obj -> list of every rank's obj)")
    if parts is None:
        return None
    return evaluator.blank().merge_bytes(*parts)


def _torch_gather(dist: Any, payload: bytes, dst: int | None) -> list | None:
    world = dist.get_world_size()
    if dst is None:
        parts: list = [None] * world
        dist.all_gather_object(parts, payload)
        return parts
    if not 0 <= dst < world:
        raise ValueError(f"dst must be a rank in 0..{world - 1}; got {dst}")
    mine = dist.get_rank() == dst
    parts = [None] * world if mine else None
    dist.gather_object(payload, parts, dst=dst)
    return parts if mine else None
