"""Matches drawn on images with Pillow: what each detection and each object became.

Every detection and object is drawn in the style of its outcome (:mod:`deteval.outcomes`),
so a picture shows the very matches behind the confusion matrix and the counts of the
report. The colours are the Okabe–Ito palette, which stays distinct under the common forms
of colour blindness, and line styles and label tags carry the outcome too:

===================  ==============  ======  =====  =====================================
key                  colour          line    tag    drawn for
===================  ==============  ======  =====  =====================================
``tp``               bluish green    solid          a detection matching an object
``duplicate``        yellow          solid   dup    FP: a second detection of an object
``wrong_class``      reddish purple  solid   cls    FP: on an object of another class
``localization``     orange          solid   loc    FP: its object, boxed badly
``background``       vermillion      solid   bg     FP: on nothing
``fn``               sky blue        dashed  FN     a missed object
``ignored``          blue            dotted  ign    crowd regions, ignored objects, the
                                                    detections they absorbed, detections
                                                    of an unknown category
``below_threshold``  black           dotted  low    detections under the score threshold
===================  ==============  ======  =====  =====================================

:data:`STYLES` holds them (tests and the report legend read the same values) and
:func:`legend` lists the entries shown. A shape is outlined from its mask (``masks``,
compressed RLE) if it has one, else from its polygon (``polygons``, shapely), else from its
rotated box (``rboxes``), else its box; keypoints (``keypoints``) come first.
Labels give the tag, class name, score and IoU; the IoU of a wrong-class detection is with
the object (of the class named in brackets) it sits on. Labels never overlap: each takes the
first free spot around its shape, the most important first, or is left out. The matching
(:func:`~deteval.outcomes.match_outcomes`) is by the similarity of its ``iou_type`` (box
IoU by default; mask IoU, OKS, ... as the COCO protocol matches), whatever shapes are drawn.

Keypoints are drawn as the category's skeleton (edges in the outcome's colour and line)
with a dot per joint: a detected joint within the OKS tolerance of its object's joint (its
OKS term ``exp(-d^2 / (2 s^2 k^2)) >= 0.5``, see :func:`draw_matches`) in the true-positive
colour, the others in the background colour. Masks are also filled, translucent (30%).
:func:`draw_legend` draws the key as an image; :func:`write_drawings` writes it beside the
drawings (``key.png``) with a contact sheet of the worst images.

Image modes
-----------
The input image is never modified; the result is a new image of the same size and mode.
RGB images are drawn on a copy; the others on a transparent RGBA layer first, then laid over
the image in its own mode: RGB and RGBA get the exact colours (drawn strokes are opaque);
L, LA, I, I;16 and F
(no colour) get each colour's luminance (0-255), times 257 for I;16 and for I images with
values above 255, divided by 255 for F images within [0, 1]; ``1`` gets the luminance
thresholded at 128; P (palette) images are drawn in RGB and re-quantised to an adaptive
palette of at most 256 colours (close to, not always exactly, the style colours); other
modes (CMYK, YCbCr, ...) are drawn in RGB and converted back.

Examples
--------
>>> import numpy as np
>>> from PIL import Image
>>> from deteval.data import Categories, Dataset, Detections, GroundTruth, Images
>>> ds = Dataset(Images(ids=[1], widths=[64], heights=[48]), Categories(ids=[1]),
...              GroundTruth(image_index=[0], category_index=[0], boxes=[[8, 8, 40, 40]]))
>>> dt = Detections(image_index=[0], category_index=[0], boxes=[[8, 8, 40, 40]], scores=[0.9])
>>> picture = draw_matches(Image.new("RGB", (64, 48)), ds, dt, 0, labels=False)
>>> picture.getpixel((8, 20)) == STYLES["tp"].rgb
True
"""

from __future__ import annotations

from ._labels import _place_label
from ._matches import KEYPOINT_THRESHOLD, MASK_FILL, _items, draw_matches
from ._shapes import COCO_PERSON_SKELETON, joint_within
from ._styles import DEFAULT_SHOW, SHOW_CHOICES, STYLES, Style, draw_legend, legend
from ._write import image_file, select_images, size_mismatch, write_drawings

__all__ = [
    "COCO_PERSON_SKELETON",
    "DEFAULT_SHOW",
    "KEYPOINT_THRESHOLD",
    "MASK_FILL",
    "SHOW_CHOICES",
    "STYLES",
    "Style",
    "draw_legend",
    "draw_matches",
    "joint_within",
    "legend",
    "select_images",
    "write_drawings",
]

# Private names tests use.
_ = (_place_label, _items, image_file, size_mismatch)
