"""``--lrp`` of ``deteval voc``, ``lvis``, ``openimages`` and ``crowdpose``: optimal LRP of
the protocol's own decisions (``deteval.lrp_of_result``, docs/diagnostics/lrp.md §5), printed
after the protocol's numbers and added to ``--json`` as ``"lrp"``. COCO's is ``deteval errors
--lrp``."""

from __future__ import annotations

from typing import Any, TextIO

__all__ = ["add_lrp_option", "lrp_of", "lrp_text", "print_lrp"]


def add_lrp_option(parser) -> None:
    """``--lrp``."""
    parser.add_argument("--lrp", action="store_true",
                        help="also compute optimal LRP (moLRP, its localisation, FP and FN "
                        "parts, class-wise optimal thresholds) from this protocol's true and "
                        "false positives at its first IoU threshold; in --json as 'lrp'")


def lrp_of(args, result: Any, extra: dict) -> Any:
    """The LRP of ``result`` when ``--lrp`` asks for it (and ``extra["lrp"]``, its JSON);
    None otherwise."""
    if not getattr(args, "lrp", False):
        return None
    from ..diagnostics.lrp import lrp_of_result

    found = lrp_of_result(result)
    extra["lrp"] = found.to_dict()
    return found


def lrp_text(result: Any) -> str:
    """A heading naming the protocol and threshold, then one line per summary number."""
    s = result.settings
    head = (f"LRP ({s.get('protocol', 'coco')}, {s.get('iou_type', 'bbox')}, IoU "
            f"{s['iou_threshold']:g})")
    return "\n".join([head] + [f"{name:<14} {value:.3f}"
                               for name, value in result.summary().items()])


def print_lrp(result: Any, out: TextIO) -> None:
    """:func:`lrp_text` after a blank line; nothing without a result."""
    if result is not None:
        print(file=out)
        print(lrp_text(result), file=out)
