"""Pictures of the results: matches drawn on images (``draw``, Pillow) and plots
(``plots``, matplotlib, the optional ``deteval[plot]`` extra, imported lazily).

Import the submodules directly, e.g. ``from deteval.viz.draw import draw_matches``.
"""
