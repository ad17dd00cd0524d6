"""Names of a package imported on first use (PEP 562), so that a program pays only for the
modules it uses (``deteval coco`` imports neither the other formats' readers nor the mask
code; docs/startup.md).

A package lists where each of its public names lives and delegates its module-level
``__getattr__`` to :func:`lazy_attribute`::

    _LAZY = {"read_gt": "formats", "average_precision": "ap:deprecated_average_precision"}

    def __getattr__(name):
        return lazy_attribute(__name__, _LAZY, name, globals())
"""

from __future__ import annotations

import sys

__all__ = ["lazy_attribute"]


def lazy_attribute(package: str, table: dict[str, str], name: str, namespace: dict, *,
                   submodules: bool = True):
    """The attribute ``name`` of ``package``, imported now and kept in ``namespace``.

    Parameters
    ----------
    package : str
        The package's ``__name__``.
    table : dict
        name -> ``"submodule"`` (relative to the package; the attribute has the same name
        there), ``"submodule:attribute"`` (another name there) or ``""`` (the name is a
        submodule).
    name : str
        The attribute asked for.
    namespace : dict
        The package's ``globals()``: the value is stored there, so that the next look-up
        does not come back here.
    submodules : bool
        Whether a name not in ``table`` that is a submodule of the package
        (``deteval.io.voc``) imports it; any other name raises AttributeError, as a missing
        attribute does.

    Returns
    -------
    object

    Examples
    --------
    >>> namespace = {}
    >>> lazy_attribute("deteval", {"Dataset": "data"}, "Dataset", namespace).__name__
    'Dataset'
    >>> sorted(namespace)
    ['Dataset']
    """
    if name in table:
        where, _, attribute = table[name].partition(":")
        module = _import(f"{package}.{where or name}")
        value = module if not where else getattr(module, attribute or name)
    elif submodules and not name.startswith("__"):
        try:
            value = _import(f"{package}.{name}")
        except ModuleNotFoundError as error:
            if error.name != f"{package}.{name}":
                raise
            raise AttributeError(f"module {package!r} has no attribute {name!r}") from None
    else:
        raise AttributeError(f"module {package!r} has no attribute {name!r}")
    namespace[name] = value
    return value


def _import(module: str):
    """``importlib.import_module(module)`` through the import statement's machinery, so that
    ``python -X importtime`` lists the module (it times only that path)."""
    __import__(module)
    return sys.modules[module]
