"""The report's HTML: style sheet, script, tables and the page around the panels.

Everything is inline (no font, style sheet or script is fetched). The script sorts tables,
filters and pages the per-class table, and filters the gallery when a confusion cell, a
listed confusion, an error kind or a class row is clicked, or a search is typed.
"""

from __future__ import annotations

import html
import json
import re
from collections.abc import Callable, Sequence
from typing import Any

from ._data import data_value, format_value

#: Rows of the per-class table shown at a time (the pager moves through the rest).
PAGE_ROWS = 50

CSS = """
:root { --fg: #1d2330; --muted: #5b6475; --line: #d9dde5; --head: #eef1f6; --accent: #2557a7; }
* { box-sizing: border-box; }
body { margin: 0; font: 15px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif;
       color: var(--fg); background: #fafbfc; }
header, main { max-width: 1200px; margin: 0 auto; padding: 0 20px; }
header { padding-top: 18px; }
h1 { font-size: 1.6em; margin: 0.2em 0; overflow-wrap: anywhere; }
h2 { font-size: 1.25em; margin: 1.6em 0 0.5em; border-bottom: 1px solid var(--line);
     padding-bottom: 0.2em; }
h3 { font-size: 1.02em; margin: 1em 0 0.3em; }
nav { display: flex; flex-wrap: wrap; gap: 4px 1em; }
nav a { color: var(--accent); }
.muted { color: var(--muted); }
p, li, figcaption { overflow-wrap: anywhere; }
table { border-collapse: separate; border-spacing: 0; background: white; margin: 0.4em 0 1em;
        font-size: 13px; }
caption { text-align: left; caption-side: top; padding: 0 0 4px; }
th, td { border-right: 1px solid var(--line); border-bottom: 1px solid var(--line);
         padding: 2px 4px; }
tr > :first-child { border-left: 1px solid var(--line); }
thead th { border-top: 1px solid var(--line); }
th { background: var(--head); text-align: left; font-weight: 600; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
table.sortable th { cursor: pointer; user-select: none; white-space: nowrap; }
table.sortable th::after { content: "\\2195"; color: #9aa3b2; font-size: 0.8em; }
table.sortable th[aria-sort="ascending"]::after { content: "\\2191"; color: var(--fg); }
table.sortable th[aria-sort="descending"]::after { content: "\\2193"; color: var(--fg); }
.scroll { overflow-x: auto; max-width: 100%; }
/* The per-class table scrolls in its box: the header row stays on top, the class column
   on the left. */
.table-box { max-height: 70vh; overflow: auto; max-width: 100%; border: 1px solid var(--line); }
.table-box table { margin: 0; }
.table-box thead th { position: sticky; top: 0; z-index: 2; }
.table-box td:first-child, .table-box th:first-child { position: sticky; left: 0; z-index: 1;
  white-space: nowrap; max-width: 12em; overflow: hidden; text-overflow: ellipsis; }
.table-box thead th:first-child { z-index: 3; }
.table-box td:first-child { background: white; }
tr.pick { cursor: pointer; }
tr.pick:hover td { background: #f3f6fb; }
.tools { display: flex; flex-wrap: wrap; gap: 8px 16px; align-items: center; margin: 0.4em 0; }
input[type=search] { font: inherit; padding: 3px 8px; width: 18em; max-width: 100%; }
button { font: inherit; padding: 2px 10px; cursor: pointer; }
.figures { display: flex; flex-wrap: wrap; gap: 16px; align-items: flex-start; }
figure { margin: 0; background: white; border: 1px solid var(--line); padding: 8px;
         max-width: 100%; }
figure img { max-width: 100%; height: auto; display: block; }
svg.plot { max-width: 100%; height: auto; display: block; font-family: inherit; }
svg text { fill: var(--fg); }
svg .cell, svg .bar[data-class], svg .multiple { cursor: pointer; }
svg .cell:hover { stroke: #c0392b; stroke-width: 2; }
figcaption { color: var(--muted); font-size: 0.9em; margin-top: 4px; }
.key { display: inline-block; width: 18px; height: 3px; vertical-align: middle;
       margin: 0 4px 0 10px; }
ol.top { columns: 2 22em; padding-left: 1.6em; margin: 0.3em 0; }
ol.top li { break-inside: avoid; }
.link { color: var(--accent); background: none; border: 0; padding: 0; text-align: left;
        text-decoration: underline; cursor: pointer; }
td.filter { cursor: pointer; color: var(--accent); text-decoration: underline; }
.gallery { display: grid; grid-template-columns: repeat(auto-fill, minmax(260px, 1fr));
           gap: 12px; }
.gallery figure { min-width: 0; }
.pair { display: grid; grid-template-columns: 1fr 1fr; gap: 6px; }
.legend { display: flex; flex-wrap: wrap; gap: 6px 18px; margin: 0.5em 0 1em; padding: 0;
          list-style: none; }
.swatch { display: inline-block; width: 26px; height: 0; border-top: 3px solid;
          vertical-align: middle; margin-right: 6px; }
#gallery-status { font-weight: 600; }
ul.notes li { margin: 0.2em 0; }
.warn { color: #a33a00; }
.up { color: #1e8449; } .down { color: #c0392b; }
footer { color: var(--muted); font-size: 0.85em; max-width: 1200px; margin: 2em auto;
         padding: 0 20px; }
"""

# Sorting (numbers by data-value, undefined last; text by locale), the per-class filter and
# pager, and the gallery filters; marks the page ready when it ran without error.
JS = """
(function () {
  "use strict";
  var each = function (list, f) { Array.prototype.forEach.call(list, f); };
  function key(cell, numeric) {
    var raw = cell.getAttribute("data-value");
    if (!numeric) { return raw === null ? cell.textContent : raw; }
    return raw === null || raw === "" ? NaN : parseFloat(raw);
  }
  var pagers = [];
  function sortBy(table, header, column) {
    var numeric = header.getAttribute("data-type") !== "text";
    var ascending = header.getAttribute("aria-sort") !== "ascending";
    var body = table.tBodies[0];
    var rows = Array.prototype.slice.call(body.rows);
    rows.sort(function (a, b) {
      var x = key(a.cells[column], numeric), y = key(b.cells[column], numeric);
      if (numeric) {
        if (isNaN(x) || isNaN(y)) { return isNaN(x) - isNaN(y); }
        return ascending ? x - y : y - x;
      }
      return ascending ? x.localeCompare(y) : y.localeCompare(x);
    });
    each(header.parentNode.cells, function (h) { h.removeAttribute("aria-sort"); });
    header.setAttribute("aria-sort", ascending ? "ascending" : "descending");
    rows.forEach(function (row) { body.appendChild(row); });
    pagers.forEach(function (p) { if (p.table === table) { p.page = 0; p.show(); } });
  }
  each(document.querySelectorAll("table.sortable"), function (table) {
    each(table.tHead.rows[0].cells, function (header, column) {
      header.tabIndex = 0;
      header.addEventListener("click", function () { sortBy(table, header, column); });
      header.addEventListener("keydown", function (event) {
        if (event.key === "Enter" || event.key === " ") {
          event.preventDefault();
          sortBy(table, header, column);
        }
      });
    });
  });
  // The per-class table: a filter box and pages of PAGE_ROWS rows.
  each(document.querySelectorAll("[data-pager]"), function (box) {
    var table = document.getElementById(box.getAttribute("data-pager"));
    var input = box.querySelector("input"), status = box.querySelector(".status");
    var size = parseInt(box.getAttribute("data-rows"), 10);
    var pager = {table: table, page: 0};
    pager.show = function () {
      var query = input.value.trim().toLowerCase(), matching = [];
      each(table.tBodies[0].rows, function (row) {
        row.hidden = true;
        if (!query || row.cells[0].textContent.toLowerCase().indexOf(query) >= 0) {
          matching.push(row);
        }
      });
      var pages = Math.max(1, Math.ceil(matching.length / size));
      pager.page = Math.min(Math.max(pager.page, 0), pages - 1);
      var first = pager.page * size;
      matching.slice(first, first + size).forEach(function (row) { row.hidden = false; });
      status.textContent = matching.length ? "rows " + (first + 1) + "\\u2013" +
        Math.min(first + size, matching.length) + " of " + matching.length : "no class matches";
    };
    input.addEventListener("input", function () { pager.page = 0; pager.show(); });
    box.querySelector(".prev").addEventListener("click", function () {
      pager.page -= 1; pager.show(); });
    box.querySelector(".next").addEventListener("click", function () {
      pager.page += 1; pager.show(); });
    pagers.push(pager);
    pager.show();
  });
  // The gallery filters.
  var shots = document.querySelectorAll("#gallery-grid figure");
  var status = document.getElementById("gallery-status");
  var search = document.getElementById("gallery-search");
  function filter(kind, value, label, scroll) {
    var shown = 0;
    each(shots, function (shot) {
      var ok = true;
      if (kind === "text") {
        ok = shot.getAttribute("data-search").indexOf(value.toLowerCase()) >= 0;
      } else if (kind) {
        ok = (" " + shot.getAttribute("data-" + kind) + " ").indexOf(" " + value + " ") >= 0;
      }
      shot.hidden = !ok;
      shown += ok;
    });
    if (status) {
      status.textContent = kind ? shown + " of " + shots.length + " images: " + label +
        (shown ? "" : " (none in the gallery)") : "";
      status.setAttribute("data-shown", String(shown));
      document.getElementById("gallery-clear").hidden = !kind;
    }
    if (kind !== "text" && search) { search.value = ""; }
    if (scroll && document.getElementById("gallery")) {
      document.getElementById("gallery").scrollIntoView();
    }
  }
  document.addEventListener("click", function (event) {
    var target = event.target.closest ? event.target.closest("[data-filter]") : null;
    if (!target) { return; }
    var parts = target.getAttribute("data-filter").split("=");
    filter(parts[0], parts[1], target.getAttribute("data-label") || parts[1], true);
  });
  if (search) {
    search.addEventListener("input", function () {
      var q = search.value.trim();
      filter(q ? "text" : "", q, "\\u201c" + q + "\\u201d", false);
    });
  }
  var clear = document.getElementById("gallery-clear");
  if (clear) { clear.addEventListener("click", function () { filter("", "", "", false); }); }
  window.detevalFilter = filter;
  document.body.setAttribute("data-ready", "1");
})();
"""


def e(value: Any) -> str:
    """HTML-escaped text (attribute-safe)."""
    return html.escape(str(value), quote=True)


def table(columns: Sequence[tuple[str, str, str, str]], rows: Sequence[dict[str, Any]], *,
          sortable: bool = False, caption: str | None = None, table_id: str | None = None,
          row_attrs: Callable[[dict[str, Any]], str] | None = None,
          cell_attrs: Callable[[str, Any], str] | None = None, boxed: bool = False) -> str:
    """A table of ``rows`` (dicts) in ``columns`` (key, header, kind, tooltip); every number
    cell has its exact value in ``data-value`` and its formatted value as text."""
    attrs = (f' id="{e(table_id)}"' if table_id else "") + (' class="sortable"' if sortable
                                                            else "")
    parts = [f"<div class=\"{'table-box' if boxed else 'scroll'}\"><table{attrs}>"]
    if caption:
        parts.append(f"<caption class=\"muted\">{e(caption)}</caption>")
    parts.append("<thead><tr>")
    for key, header, kind, tip in columns:
        data_type = "text" if kind == "text" else "number"
        parts.append(f'<th data-key="{e(key)}" data-type="{data_type}" title="{e(tip)}">'
                     f"{e(header)}</th>")
    parts.append("</tr></thead><tbody>")
    for row in rows:
        parts.append(f"<tr{row_attrs(row) if row_attrs else ''}>")
        for key, _, kind, _ in columns:
            value = row.get(key)
            css = "" if kind == "text" else ' class="num"'
            extra = cell_attrs(key, value) if cell_attrs else ""
            if extra and css:
                extra, css = extra.replace(' class="', ' class="num '), ""
            parts.append(f'<td{css}{extra} data-key="{e(key)}" '
                         f'data-value="{e(data_value(value, kind))}">'
                         f"{e(format_value(value, kind))}</td>")
        parts.append("</tr>")
    parts.append("</tbody></table></div>")
    return "".join(parts)


def figure(svg: str, caption: str = "") -> str:
    """A figure of one inline SVG, as wide as the SVG (its caption wraps to that width)."""
    width = int(re.search(r'width="(\d+)"', svg).group(1)) + 18
    caption = f"<figcaption>{caption}</figcaption>" if caption else ""
    return f'<figure style="width: {width}px">{svg}{caption}</figure>'


def pager(table_id: str, placeholder: str) -> str:
    """The filter box and page buttons of a long table (see the script)."""
    return (f'<div class="tools" data-pager="{e(table_id)}" data-rows="{PAGE_ROWS}">'
            f'<input type="search" placeholder="{e(placeholder)}" aria-label="filter classes">'
            '<button type="button" class="prev">&lsaquo; previous</button>'
            '<span class="status muted"></span>'
            '<button type="button" class="next">next &rsaquo;</button></div>')


def shell(title: str, meta: str, sections: Sequence[tuple[str, str, str]],
          footer: str, data: dict[str, Any] | None) -> str:
    """The whole page: ``sections`` are ``(id, heading, body HTML)``; ``data`` (single page)
    is embedded as ``<script type="application/json" id="results-json">``."""
    nav = "".join(f'<a href="#{e(key)}">{e(heading)}</a>' for key, heading, _ in sections)
    if data is None:
        nav += '<a href="results.json">results.json</a>'
    out = ["<!DOCTYPE html>", '<html lang="en">', "<head>", '<meta charset="utf-8">',
           '<meta name="viewport" content="width=device-width, initial-scale=1">',
           '<link rel="icon" href="data:,">', f"<title>{e(title)}</title>",
           f"<style>{CSS}</style>", "</head>", "<body>", "<header>", f"<h1>{e(title)}</h1>",
           f'<p class="muted">{meta}</p>', f"<nav>{nav}</nav>", "</header>", "<main>"]
    for key, heading, body in sections:
        out.append(f'<section id="{e(key)}"><h2>{e(heading)}</h2>{body}</section>')
    out.append("</main>")
    out.append(f"<footer>{footer}</footer>")
    if data is not None:
        text = json.dumps(data, allow_nan=False, separators=(",", ":")).replace("</", "<\\/")
        out.append(f'<script type="application/json" id="results-json">{text}</script>')
    out.append(f"<script>{JS}</script>")
    out.append("</body></html>")
    return "\n".join(out) + "\n"
