"""Charts drawn inside an htmlpage.py page: inline SVG whose colours are the page's
(CSS classes, so dark mode follows), on a linear or logarithmic axis. charts.py draws
the standalone SVG files of the Markdown reports; these belong to a page.

    plot(x_axis, y_axis, layers, x_label, y_label) -> "<svg ...>"

A layer is bars(lefts, rights, heights, cls), line(xs, ys, cls, dashed) or
steps(xs, ys, cls): values in the axes' units; points an axis cannot show (None, or at
most 0 on a logarithmic one) are left out.
"""
import math

from .charts import nice_ticks, tick_label
from .htmlpage import esc

WIDTH, HEIGHT = 640, 240
LEFT, RIGHT, TOP, BOTTOM = 56, 14, 10, 40


class Axis:
    """lo..hi, linear or logarithmic (decades), mapped onto pixels lo_px..hi_px."""

    def __init__(self, lo, hi, log=False):
        if log:
            lo = 10 ** math.floor(math.log10(max(lo, 1e-12)))
            hi = 10 ** math.ceil(math.log10(max(hi, lo * 10)))
            self.ticks = [10.0 ** e for e in range(round(math.log10(lo)), round(math.log10(hi)) + 1)]
        else:
            self.ticks = [t + lo for t in nice_ticks(hi - lo)] if hi > lo else [lo, lo + 1]
            hi = self.ticks[-1]
        self.lo, self.hi, self.log = lo, hi, log
        self.px = (0.0, 1.0)

    def shows(self, v):
        return v is not None and math.isfinite(v) and (v > 0 or not self.log)

    def __call__(self, v):
        a, b = self.px
        if self.log:
            f = (math.log10(v) - math.log10(self.lo)) / (math.log10(self.hi) - math.log10(self.lo))
        else:
            f = (v - self.lo) / ((self.hi - self.lo) or 1)
        return a + (b - a) * min(max(f, -0.05), 1.05)


def axis_for(values, log=False, zero=True):
    """An Axis over the values it can show (from 0 on a linear one when `zero`)."""
    shown = [v for v in values if v is not None and math.isfinite(v) and (v > 0 or not log)]
    if not shown:
        return Axis(1, 10, log) if log else Axis(0, 1)
    lo, hi = min(shown), max(shown)
    return Axis(lo, hi, log=True) if log else Axis(0 if zero else lo, hi)


def bars(lefts, rights, heights, cls="bar-a"):
    return ("bars", lefts, rights, heights, cls)


def line(xs, ys, cls="a", dashed=False):
    return ("line", xs, ys, cls + (" dash" if dashed else ""))


def steps(xs, ys, cls="a"):
    """A line that holds each value until the next x."""
    sx, sy = [], []
    for i, (x, y) in enumerate(zip(xs, ys)):
        if i:
            sx.append(x)
            sy.append(sy[-1])
        sx.append(x)
        sy.append(y)
    return ("line", sx, sy, cls)


def draw(layer, x, y):
    kind = layer[0]
    if kind == "bars":
        _, lefts, rights, heights, cls = layer
        base = y.px[0]
        out = []
        for l, r, h in zip(lefts, rights, heights):
            if x.shows(l) and x.shows(r) and y.shows(h) and h:
                top = y(h)
                out.append(f'<rect class="{cls}" x="{x(l):.1f}" y="{top:.1f}" '
                           f'width="{max(x(r) - x(l) - 0.5, 0.6):.1f}" height="{base - top:.1f}"/>')
        return "".join(out)
    _, xs, ys, cls = layer
    pts = [f"{x(a):.1f},{y(b):.1f}" for a, b in zip(xs, ys) if x.shows(a) and y.shows(b)]
    return f'<polyline class="{cls}" points="{" ".join(pts)}"/>' if len(pts) > 1 else ""


def plot(x, y, layers, x_label, y_label, title="", names=()):
    """The SVG of `layers` over the axes x and y (Axis each); names: [(x, text)] written
    slanted under the axis instead of x's ticks (a bar chart's groups)."""
    bottom = BOTTOM + (4 * max(len(t) for _, t in names) if names else 0)
    height = HEIGHT - BOTTOM + bottom
    x.px = (LEFT, WIDTH - RIGHT)
    y.px = (HEIGHT - BOTTOM, TOP)
    out = [f'<svg viewBox="0 0 {WIDTH} {height}" role="img" aria-label="{esc(title or y_label)}">'
           f"<title>{esc(title or y_label)}</title>"]
    for t in y.ticks:
        ty = y(t)
        out.append(f'<line class="grid" x1="{LEFT}" y1="{ty:.1f}" x2="{WIDTH - RIGHT}" '
                   f'y2="{ty:.1f}"/><text x="{LEFT - 6}" y="{ty + 4:.1f}" text-anchor="end">'
                   f"{esc(tick_label(t))}</text>")
    for t in [] if names else x.ticks:
        tx = x(t)
        out.append(f'<text x="{tx:.1f}" y="{HEIGHT - BOTTOM + 16}" text-anchor="middle">'
                   f"{esc(tick_label(t))}</text>")
    for at, text in names:
        tx, ty = x(at), HEIGHT - BOTTOM + 12
        out.append(f'<text x="{tx:.1f}" y="{ty}" text-anchor="end" '
                   f'transform="rotate(-35 {tx:.1f} {ty})">{esc(text)}</text>')
    out.append(f'<line class="axis" x1="{LEFT}" y1="{HEIGHT - BOTTOM}" x2="{WIDTH - RIGHT}" '
               f'y2="{HEIGHT - BOTTOM}"/>')
    out += [draw(layer, x, y) for layer in layers]
    if x_label:
        out.append(f'<text x="{(LEFT + WIDTH - RIGHT) / 2:.0f}" y="{height - 6}" '
                   f'text-anchor="middle">{esc(x_label)}</text>')
    out.append(f'<text x="12" y="{(TOP + HEIGHT - BOTTOM) / 2:.0f}" text-anchor="middle" '
               f'transform="rotate(-90 12 {(TOP + HEIGHT - BOTTOM) / 2:.0f})">{esc(y_label)}</text>')
    out.append("</svg>")
    return "".join(out)
