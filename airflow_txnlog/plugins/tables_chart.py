"""The Tables view's chart, drawn on the server as SVG (no script, no CDN, works offline).

Two series over the versions of one history page, oldest on the left:
- the table's size in bytes after each version, exact: from the latest size, each newer commit's
  bytes added are taken off and its bytes removed put back (the page must start at the latest
  version, which is what the view asks for);
- the rows each version added (the adds' `numRecords`; a version without stats is a gap).
Each series is scaled to its own height; the axis labels give the ranges.
"""

from __future__ import annotations

from html import escape
from typing import Any

WIDTH, HEIGHT, PAD = 720, 220, 40


def sizes_after(entries: list[dict[str, Any]], latest_size: int) -> list[tuple[int, int]]:
    """(version, table bytes after it) for entries given newest first, starting at the latest."""
    out, size = [], latest_size
    for e in entries:
        out.append((int(e["version"]), size))
        size = size - int(e["bytesAdded"]) + int(e["bytesRemoved"])
    return list(reversed(out))


def _points(values: list[tuple[int, float | None]], lo_v: int, hi_v: int) -> list[str]:
    known = [v for _, v in values if v is not None]
    if not known:
        return []
    lo, hi = min(known), max(known)
    span_v, span = max(hi_v - lo_v, 1), (hi - lo) or 1
    pts = []
    for version, value in values:
        if value is None:
            continue
        x = PAD + (version - lo_v) * (WIDTH - 2 * PAD) / span_v
        y = HEIGHT - PAD - (value - lo) * (HEIGHT - 2 * PAD) / span
        pts.append(f"{x:.1f},{y:.1f}")
    return pts


def _polyline(name: str, colour: str, points: list[str]) -> str:
    joined = " ".join(points)
    return f'<polyline class="{name}" fill="none" stroke="{colour}" stroke-width="2" points="{joined}"/>'


def chart_svg(entries: list[dict[str, Any]], latest_size: int) -> str:
    """The SVG document for one history page (entries newest first)."""
    if not entries:
        return (
            f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="40">'
            '<text x="4" y="24">no versions</text></svg>'
        )
    sizes = sizes_after(entries, latest_size)
    rows = [(int(e["version"]), e["rowsAdded"]) for e in reversed(entries)]
    lo_v, hi_v = sizes[0][0], sizes[-1][0]
    size_pts = _points([(v, float(s)) for v, s in sizes], lo_v, hi_v)
    row_pts = _points([(v, None if r is None else float(r)) for v, r in rows], lo_v, hi_v)
    size_range = f"{min(s for _, s in sizes):,}-{max(s for _, s in sizes):,} bytes"
    known_rows = [r for _, r in rows if r is not None]
    row_range = f"{min(known_rows):,}-{max(known_rows):,} rows added" if known_rows else "no row counts"
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" role="img" class="txnlog-chart" width="{WIDTH}" '
        f'height="{HEIGHT}" viewBox="0 0 {WIDTH} {HEIGHT}" data-versions="{len(entries)}">',
        f"<title>table size and rows added, versions {lo_v}-{hi_v}</title>",
        f'<line x1="{PAD}" y1="{HEIGHT - PAD}" x2="{WIDTH - PAD}" y2="{HEIGHT - PAD}" stroke="#888"/>',
        _polyline("bytes", "#1f77b4", size_pts),
        _polyline("rows", "#ff7f0e", row_pts),
        f'<text x="{PAD}" y="16" fill="#1f77b4" font-size="12">{escape(size_range)}</text>',
        f'<text x="{WIDTH // 2}" y="16" fill="#ff7f0e" font-size="12">{escape(row_range)}</text>',
        f'<text x="{PAD}" y="{HEIGHT - 12}" font-size="12">version {lo_v}</text>',
        f'<text x="{WIDTH - PAD}" y="{HEIGHT - 12}" font-size="12" text-anchor="end">version {hi_v}</text>',
        "</svg>",
    ]
    return "\n".join(parts)
