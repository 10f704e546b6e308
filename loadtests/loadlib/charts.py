"""Charts as plain SVG text (no plotting library): grouped bars for the reports'
throughput and latency figures, and lines through points for latency against
throughput (loadtests/bench --sweep)."""
import math
from xml.sax.saxutils import escape

PALETTE = {"native": "#4e79a7", "node": "#3c873a", "bun": "#e8833a", "deno": "#6b5b95",
           "native-prepared": "#59a14f", "native-pipeline": "#e15759"}
FALLBACK = ["#4e79a7", "#e15759", "#76b7b2", "#edc948", "#b07aa1", "#9c755f"]
FONT = "font-family='DejaVu Sans, Helvetica, Arial, sans-serif'"


def color(key, index):
    return PALETTE.get(key, FALLBACK[index % len(FALLBACK)])


def lighter(hex_color, amount=0.55):
    """The colour mixed with white (amount 0: unchanged, 1: white)."""
    r, g, b = (int(hex_color[i:i + 2], 16) for i in (1, 3, 5))
    mix = [round(c + (255 - c) * amount) for c in (r, g, b)]
    return "#" + "".join(f"{c:02x}" for c in mix)


def nice_ticks(top, count=5):
    """Tick values from 0 to at least `top`, in steps of 1, 2 or 5 times a power of ten."""
    if not top or top <= 0 or not math.isfinite(top):
        return [0, 1]
    raw = top / count
    power = 10 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 2.5, 5, 10) if m * power >= raw)
    ticks = [0.0]
    while ticks[-1] < top - 1e-12:
        ticks.append(round(ticks[-1] + step, 12))
    return ticks


def tick_label(v):
    """An axis label: 0, 2.5, 40, 2k, 12.5k, 1.2M."""
    if abs(v) >= 1e6:
        return f"{v / 1e6:g}M"
    if abs(v) >= 1e3:
        return f"{v / 1e3:g}k"
    return f"{round(v, 6):g}"


def short(v):
    """Compact label of a value: 12,345 -> 12.3k, 0.84 -> 0.84."""
    if v is None:
        return "n/a"
    a = abs(v)
    if a >= 1e6:
        return f"{v / 1e6:.1f}M"
    if a >= 1e4:
        return f"{v / 1e3:.0f}k"
    if a >= 1e3:
        return f"{v / 1e3:.1f}k"
    if a >= 100:
        return f"{v:.0f}"
    if a >= 10:
        return f"{v:.1f}"
    return f"{v:.2f}"


def bar_chart(title, subtitle, groups, series, values, unit, inner=None, inner_label=None, outer_label=None):
    """A grouped bar chart.

    groups  [(key, label)] along the x axis
    series  [(key, label)] one bar per series in every group (colour by key)
    values  {series key: {group key: number or None}}
    inner   optional second figure drawn as a darker bar inside each bar (e.g. p95 inside p99);
            the outer bar is then drawn lighter. inner_label/outer_label name them in the legend.
    Returns the SVG document as a string.
    """
    n_groups, n_series = max(1, len(groups)), max(1, len(series))
    bar_w = 26 if n_series <= 4 else 18
    group_gap = 36
    group_w = n_series * bar_w + (n_series - 1) * 4
    left, right, top, bottom = 70, 20, 64, 70
    plot_w = n_groups * group_w + (n_groups + 1) * group_gap
    plot_h = 260
    legend_w = sum(24 + 7 * len(label) for _, label in series)
    width = max(left + plot_w + right, left + legend_w + right, 540)
    if left + plot_w + right < width:         # spread the groups over the whole width
        plot_w = width - left - right
        group_gap = (plot_w - n_groups * group_w) / (n_groups + 1)
    height = top + plot_h + bottom

    everything = [v for s in values.values() for v in s.values() if v is not None]
    if inner:
        everything += [v for s in inner.values() for v in s.values() if v is not None]
    ticks = nice_ticks(max(everything) if everything else 0)
    y_max = ticks[-1] or 1.0

    def y(v):
        return top + plot_h - plot_h * (v / y_max)

    out = [f"<svg xmlns='http://www.w3.org/2000/svg' width='{width}' height='{height}' "
           f"viewBox='0 0 {width} {height}' {FONT} font-size='11'>",
           f"<rect x='0' y='0' width='{width}' height='{height}' fill='#ffffff'/>",
           f"<text x='{left}' y='22' font-size='15' font-weight='bold'>{escape(title)}</text>"]
    if subtitle:
        out.append(f"<text x='{left}' y='40' fill='#555555'>{escape(subtitle)}</text>")
    for t in ticks:
        ty = y(t)
        out.append(f"<line x1='{left}' y1='{ty:.1f}' x2='{left + plot_w}' y2='{ty:.1f}' stroke='#e3e3e3'/>")
        out.append(f"<text x='{left - 6}' y='{ty + 4:.1f}' text-anchor='end' fill='#444444'>{escape(tick_label(t))}</text>")
    out.append(f"<text x='16' y='{top + plot_h / 2:.1f}' transform='rotate(-90 16 {top + plot_h / 2:.1f})' "
               f"text-anchor='middle' fill='#444444'>{escape(unit)}</text>")
    out.append(f"<line x1='{left}' y1='{top + plot_h}' x2='{left + plot_w}' y2='{top + plot_h}' stroke='#888888'/>")

    for gi, (gkey, glabel) in enumerate(groups):
        gx = left + group_gap + gi * (group_w + group_gap)
        out.append(f"<text x='{gx + group_w / 2:.1f}' y='{top + plot_h + 18}' text-anchor='middle' "
                   f"font-size='12'>{escape(glabel)}</text>")
        for si, (skey, slabel) in enumerate(series):
            x = gx + si * (bar_w + 4)
            base = color(skey, si)
            v = values.get(skey, {}).get(gkey)
            if v is None:
                out.append(f"<text x='{x + bar_w / 2:.1f}' y='{top + plot_h - 4}' text-anchor='middle' "
                           f"fill='#999999' font-size='9'>n/a</text>")
                continue
            fill = lighter(base) if inner else base
            out.append(f"<rect x='{x:.1f}' y='{y(v):.1f}' width='{bar_w}' height='{max(0.0, top + plot_h - y(v)):.1f}' "
                       f"fill='{fill}'><title>{escape(f'{slabel}, {glabel}: {short(v)} {unit}')}</title></rect>")
            label_y = y(v) - 4
            if inner:
                iv = inner.get(skey, {}).get(gkey)
                if iv is not None:
                    out.append(f"<rect x='{x + 4:.1f}' y='{y(iv):.1f}' width='{bar_w - 8}' "
                               f"height='{max(0.0, top + plot_h - y(iv)):.1f}' fill='{base}'>"
                               f"<title>{escape(f'{slabel}, {glabel}: {inner_label} {short(iv)} {unit}')}</title></rect>")
            out.append(f"<text x='{x + bar_w / 2:.1f}' y='{label_y:.1f}' text-anchor='middle' font-size='9' "
                       f"fill='#222222'>{escape(short(v))}</text>")

    # legend
    lx, ly = left, top + plot_h + 40
    for si, (skey, slabel) in enumerate(series):
        out.append(f"<rect x='{lx}' y='{ly - 9}' width='12' height='12' fill='{color(skey, si)}'/>")
        out.append(f"<text x='{lx + 16}' y='{ly + 1}'>{escape(slabel)}</text>")
        lx += 24 + 7 * len(slabel)
    if inner:
        out.append(f"<text x='{left}' y='{ly + 20}' fill='#555555'>"
                   f"{escape(f'dark inner bar: {inner_label}; light outer bar: {outer_label}')}</text>")
    out.append("</svg>")
    return "\n".join(out) + "\n"


def line_chart(title, subtitle, series, x_unit, y_unit, log_y=False):
    """Lines through points, e.g. latency against throughput.

    series  [(colour key, label, [(x, y, point label or None)], dashed)]; points with a
            None coordinate are left out
    log_y   a logarithmic y axis (decades), for latencies that span orders of magnitude
    Returns the SVG document as a string.
    """
    left, right, top, bottom = 70, 20, 64, 90
    plot_w, plot_h = 620, 300
    pts_all = [(x, y) for _, _, pts, _ in series for x, y, _ in pts
               if x is not None and y is not None and (y > 0 or not log_y)]
    x_ticks = nice_ticks(max((x for x, _ in pts_all), default=0))
    x_max = x_ticks[-1] or 1.0
    if log_y:
        ys = [y for _, y in pts_all] or [1.0]
        lo = math.floor(math.log10(min(ys)))
        hi = math.ceil(math.log10(max(ys)))
        if hi == lo:
            hi += 1
        y_ticks = [10.0 ** e for e in range(lo, hi + 1)]

        def y_of(v):
            return top + plot_h - plot_h * (math.log10(v) - lo) / (hi - lo)
    else:
        y_ticks = nice_ticks(max((y for _, y in pts_all), default=0))

        def y_of(v):
            return top + plot_h - plot_h * v / (y_ticks[-1] or 1.0)

    def x_of(v):
        return left + plot_w * v / x_max

    width, height = left + plot_w + right, top + plot_h + bottom
    out = [f"<svg xmlns='http://www.w3.org/2000/svg' width='{width}' height='{height}' "
           f"viewBox='0 0 {width} {height}' {FONT} font-size='11'>",
           f"<rect x='0' y='0' width='{width}' height='{height}' fill='#ffffff'/>",
           f"<text x='{left}' y='22' font-size='15' font-weight='bold'>{escape(title)}</text>"]
    if subtitle:
        out.append(f"<text x='{left}' y='40' fill='#555555'>{escape(subtitle)}</text>")
    for t in y_ticks:
        ty = y_of(t)
        out.append(f"<line x1='{left}' y1='{ty:.1f}' x2='{left + plot_w}' y2='{ty:.1f}' "
                   f"stroke='#e3e3e3'/>")
        out.append(f"<text x='{left - 6}' y='{ty + 4:.1f}' text-anchor='end' fill='#444444'>"
                   f"{escape(tick_label(t))}</text>")
    for t in x_ticks:
        tx = x_of(t)
        out.append(f"<line x1='{tx:.1f}' y1='{top}' x2='{tx:.1f}' y2='{top + plot_h}' "
                   f"stroke='#f0f0f0'/>")
        out.append(f"<text x='{tx:.1f}' y='{top + plot_h + 16}' text-anchor='middle' "
                   f"fill='#444444'>{escape(tick_label(t))}</text>")
    out.append(f"<text x='16' y='{top + plot_h / 2:.1f}' transform='rotate(-90 16 "
               f"{top + plot_h / 2:.1f})' text-anchor='middle' fill='#444444'>"
               f"{escape(y_unit)}</text>")
    out.append(f"<text x='{left + plot_w / 2:.1f}' y='{top + plot_h + 34}' text-anchor='middle' "
               f"fill='#444444'>{escape(x_unit)}</text>")
    out.append(f"<line x1='{left}' y1='{top + plot_h}' x2='{left + plot_w}' y2='{top + plot_h}' "
               f"stroke='#888888'/>")
    keys = []
    for key, label, pts, dashed in series:
        if key not in keys:
            keys.append(key)
        c = color(key, keys.index(key))
        pts = [(x, y, lab) for x, y, lab in pts
               if x is not None and y is not None and (y > 0 or not log_y)]
        if not pts:
            continue
        path = " ".join(f"{x_of(x):.1f},{y_of(y):.1f}" for x, y, _ in pts)
        dash = " stroke-dasharray='4 3'" if dashed else ""
        out.append(f"<polyline points='{path}' fill='none' stroke='{c}' stroke-width='2'{dash}>"
                   f"<title>{escape(label)}</title></polyline>")
        for x, y, lab in pts:
            out.append(f"<circle cx='{x_of(x):.1f}' cy='{y_of(y):.1f}' r='3' fill='{c}'>"
                       f"<title>{escape(f'{label}: {short(x)} {x_unit}, {short(y)} {y_unit}')}"
                       f"</title></circle>")
            if lab:
                out.append(f"<text x='{x_of(x) + 5:.1f}' y='{y_of(y) - 5:.1f}' font-size='9' "
                           f"fill='#222222'>{escape(lab)}</text>")
    lx, ly = left, top + plot_h + 56
    for key, label, _, dashed in series:
        if dashed:
            continue
        c = color(key, keys.index(key))
        name = label.rsplit(" ", 1)[0]
        out.append(f"<rect x='{lx}' y='{ly - 9}' width='12' height='12' fill='{c}'/>")
        out.append(f"<text x='{lx + 16}' y='{ly + 1}'>{escape(name)}</text>")
        lx += 24 + 7 * len(name)
    out.append(f"<text x='{left}' y='{ly + 20}' fill='#555555'>solid: p99; dashed: p50; "
               f"labels: connections</text>")
    out.append("</svg>")
    return "\n".join(out) + "\n"
