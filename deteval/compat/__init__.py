"""A drop-in for pycocotools' API (``COCO``, ``COCOeval``, ``Params``, ``mask``).

Code written against pycocotools runs unchanged on deteval's engine, either by importing
from here::

    from deteval.compat import COCO, COCOeval

or, for code you do not want to edit (a training framework's evaluator), by calling
:func:`init_as_pycocotools` once before that code imports pycocotools. The numbers, the
printed lines and the records (``evalImgs``, ``ious``, ``eval``) are pycocotools'.

Examples
--------
>>> import sys
>>> init_as_pycocotools()
>>> from pycocotools.cocoeval import COCOeval as Imported
>>> Imported is COCOeval
True
>>> uninstall_pycocotools()
>>> "pycocotools.cocoeval" in sys.modules and sys.modules["pycocotools.cocoeval"] is cocoeval
False
"""

from __future__ import annotations

import sys
import types

from pycocotools import _mask

from . import coco, cocoeval, mask
from .coco import COCO, NotSupportedError, ResultsError
from .cocoeval import COCOeval, Params

__all__ = ["COCO", "COCOeval", "NotSupportedError", "Params", "ResultsError",
           "init_as_pycocotools", "mask", "uninstall_pycocotools"]

_NAMES = ("pycocotools", "pycocotools.coco", "pycocotools.cocoeval", "pycocotools.mask")
_saved: dict[str, types.ModuleType | None] | None = None   # what was there before install


def _package() -> types.ModuleType:
    package = types.ModuleType("pycocotools", "deteval.compat standing in for pycocotools")
    real = _saved.get("pycocotools") if _saved else None
    # A package whose other submodules (the C routines ``_mask``) are the real ones.
    package.__path__ = list(getattr(real, "__path__", []))
    package._mask = _mask
    # No __version__, as the real package has none (mmdetection compares it as a string to
    # tell its own fork apart, and would warn).
    package.coco, package.cocoeval, package.mask = coco, cocoeval, mask
    package.deteval_compat = True
    return package


def init_as_pycocotools() -> None:
    """Make ``import pycocotools...`` give :mod:`deteval.compat` in this process.

    Installs modules under ``pycocotools``, ``pycocotools.coco``, ``pycocotools.cocoeval``
    and ``pycocotools.mask`` in ``sys.modules``. Call it before the code that imports them:
    names already imported elsewhere (``from pycocotools.coco import COCO`` that ran before)
    keep the real ones. Calling it again does nothing; :func:`uninstall_pycocotools` puts
    back what was there.

    Examples
    --------
    >>> init_as_pycocotools(); init_as_pycocotools()      # idempotent
    >>> import pycocotools.coco
    >>> pycocotools.coco.COCO is COCO
    True
    >>> uninstall_pycocotools()
    """
    global _saved
    if _saved is not None:
        return
    _saved = {name: sys.modules.get(name) for name in _NAMES}
    sys.modules["pycocotools"] = _package()
    sys.modules["pycocotools.coco"] = coco
    sys.modules["pycocotools.cocoeval"] = cocoeval
    sys.modules["pycocotools.mask"] = mask


def uninstall_pycocotools() -> None:
    """Undo :func:`init_as_pycocotools`: the modules that were there before come back.

    Names imported while it was installed keep pointing to :mod:`deteval.compat`.
    """
    global _saved
    if _saved is None:
        return
    for name, module in _saved.items():
        if module is None:
            sys.modules.pop(name, None)
        else:
            sys.modules[name] = module
    _saved = None
