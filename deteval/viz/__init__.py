"""Pictures of the results: matches drawn on images (``draw``, Pillow) and plots
(``plots``, matplotlib, the optional ``deteval[plot]`` extra, imported lazily).

Import the submodules directly, e.g. ``from deteval.viz.draw import draw_matches``.

``draw`` draws what :func:`deteval.outcomes.match_outcomes` decided for every detection and
object (true positive, false positive by reason, missed, ignored) in a colour-blind-safe
style per outcome (``draw.STYLES``; ``draw.legend()`` lists the entries for a legend):
``draw_matches`` returns one new picture, ``write_drawings`` writes a dataset's pictures as
PNG files (``deteval draw`` on the command line).
"""
