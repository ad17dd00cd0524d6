"""What crosses the pipe between the parent and a bootstrap worker
(``_bootstrap_workers``): the framing of each message, the engine's pickling, and the
digest of the code a worker runs (its hello).

Framing: a header (payload length, number of out-of-band buffers), the buffers' lengths,
the pickle (protocol 5), the buffers. ``docs/diagnostics/bootstrap.md`` §13, "Worker
processes".
"""

from __future__ import annotations

import pickle
import struct
from collections.abc import Iterable
from typing import Any

import numpy as np

__all__ = ["code_digest"]

_MAGIC = b"DTBW"
_HEADER = struct.Struct("<QI")
_LENGTH = struct.Struct("<Q")

#: The modules whose code a worker's numbers run (with the engine's own, ``preload``): the
#: parent's and the worker's must be the same code, not only the same files. The three
#: modules of the worker machinery are all listed (the worker's loop and the framing carry
#: the numbers too), and the summaries several protocols' resamples share (``_results``:
#: LVIS and CrowdPose; ``coco.summarize_value``: COCO and CrowdPose).
_CODE_MODULES = ("deteval.diagnostics._bootstrap_workers", "deteval.diagnostics._bootstrap_wire",
                 "deteval.diagnostics._bootstrap_process", "deteval.diagnostics.bootstrap",
                 "deteval.diagnostics._bootstrap_plans", "deteval.diagnostics._bootstrap_lrp",
                 "deteval.protocols._coco_stages", "deteval.diagnostics.lrp",
                 "deteval.protocols._results", "deteval.protocols.coco")


def code_digest(modules: Iterable[str]) -> str:
    """A digest of the code of the functions and methods of ``modules`` as this process runs
    it (its code objects, not its files): a worker started after the package was upgraded
    or its checkout switched in place reads the new files, and its digest differs from the
    parent's (still running the old code). Modules not loaded are imported.

    >>> code_digest(["deteval.diagnostics._bootstrap_wire"]) == code_digest(
    ...     ["deteval.diagnostics._bootstrap_wire"])
    True
    """
    import hashlib
    import importlib
    import types

    digest = hashlib.sha256()

    def constant(value: Any) -> None:
        if isinstance(value, types.CodeType):
            code(value)
        elif isinstance(value, frozenset):      # its order follows the strings' hashes
            digest.update(repr(sorted(repr(v) for v in value)).encode())
        elif isinstance(value, tuple):
            for item in value:
                constant(item)
        else:
            digest.update(repr(value).encode())

    def code(c: types.CodeType) -> None:
        digest.update(c.co_code)
        digest.update(repr((c.co_name, c.co_names, c.co_varnames)).encode())
        for value in c.co_consts:
            constant(value)

    for name in sorted(set(modules)):
        module = importlib.import_module(name)
        digest.update(name.encode())
        for key, value in sorted(vars(module).items()):
            if getattr(value, "__module__", None) != name:
                continue
            members = vars(value).items() if isinstance(value, type) else [(key, value)]
            for _, member in sorted(members, key=lambda kv: kv[0]):
                member = getattr(member, "__func__", member)      # static/class methods
                if isinstance(member, types.FunctionType):
                    digest.update(member.__qualname__.encode())
                    code(member.__code__)
    return digest.hexdigest()





def _send(stream: Any, obj: Any) -> None:
    buffers: list = []
    _write(stream, pickle.dumps(obj, protocol=5, buffer_callback=buffers.append), buffers)


def _write(stream: Any, payload: bytes, buffers: list) -> None:
    raws = [b.raw() for b in buffers]
    stream.write(_HEADER.pack(len(payload), len(raws)))
    for raw in raws:
        stream.write(_LENGTH.pack(raw.nbytes))
    stream.write(payload)
    for raw in raws:
        stream.write(raw)
    stream.flush()


def _read_exact(stream: Any, n: int) -> memoryview:
    """``n`` bytes (in an aligned numpy buffer); EOFError when the stream ends first."""
    out = memoryview(np.empty(n, np.uint8)).cast("B")
    got = 0
    while got < n:
        k = stream.readinto(out[got:])
        if not k:
            raise EOFError("pipe closed")
        got += k
    return out


def _recv(stream: Any) -> Any:
    length, n_buffers = _HEADER.unpack(_read_exact(stream, _HEADER.size))
    sizes = [_LENGTH.unpack(_read_exact(stream, _LENGTH.size))[0] for _ in range(n_buffers)]
    payload = _read_exact(stream, length)
    buffers = [_read_exact(stream, size) for size in sizes]
    return pickle.loads(payload, buffers=buffers)


class _Pickler(pickle.Pickler):
    """Pickles a scratch ``Workspace`` (a thread-local) as a fresh one."""

    def reducer_override(self, obj: Any) -> Any:
        from ._bootstrap_plans import Workspace

        if isinstance(obj, Workspace):
            return Workspace, ()
        return NotImplemented


def _dump_engine(engine: Any) -> tuple[bytes, list]:
    import io

    buffers: list = []
    stream = io.BytesIO()
    _Pickler(stream, protocol=5, buffer_callback=buffers.append).dump(engine)
    return stream.getvalue(), buffers
