"""judge's outputs: the summary on stdout (summary()) and the page (write()): the
verdicts on top, then the pictures that make them plain, arrivals against the declared
schedule, inter-arrival times against the exponential, connections open, and the
server's latency beside the client's when a per-request log was joined.
"""
import math

from loadlib import htmlpage, pagecharts as pc
from loadlib.judgement import Model

NAME_WIDTH = 18


def summary_text(result):
    """A few lines: the verdict, then one line per check and the reason of each that is
    not a PASS."""
    model = Model(**result["model"]).describe() if result.get("model") else ""
    n = result.get("requests")
    lines = [f"judge: {result['verdict']}: " + (f"{n:,} requests; " if n is not None else "")
             + model]
    for c in result["checks"]:
        lines.append(f"  {c['verdict']:<4}  {c['name']:<{NAME_WIDTH}} {c['figure']}")
        if c["reason"]:
            lines.append(f"  {'':<4}  {'':<{NAME_WIDTH}} why: {c['reason']}")
    t = result.get("timings_s")
    if t and "journal_read" in t:
        lines.append(f"  journal read in {t['journal_read']:.2f} s, checks {t['checks']:.2f} s, "
                     f"report {t['report']:.2f} s; peak memory {result['peak_rss_mb']:.0f} MB")
    return "\n".join(lines)


def arrivals_chart(s):
    a = s["arrivals"]
    t, per_s = a["t_s"], a["per_s"]
    half = s["window_ms"] / 2000
    x = pc.axis_for([0, (t[-1] + half) if t else 1])
    y = pc.axis_for(per_s + [v for v in (a["declared"] or []) if v is not None])
    layers = [pc.bars([v - half for v in t], [v + half for v in t], per_s, "bar-a")]
    key = [("ka", "arrivals")]
    if a["declared"]:
        layers.append(pc.line(t, a["declared"], "b", dashed=True))
        key.append(("kb", "declared"))
    svg = pc.plot(x, y, layers, "seconds from the first arrival", "arrivals/s",
                  title="arrivals per window against the declared rate")
    return htmlpage.chart_card(f"Arrivals per {s['window_ms']:g} ms", svg, key,
                           "The server's clock on every request (the journal's started_us).")


def gaps_chart(s):
    g = s["gaps"]
    edges, seen, expo = g["edges_ms"], g["seen"], g["exponential"]
    x = pc.axis_for(edges, log=True)
    y = pc.axis_for([v for v in seen + expo if v > 0], log=True)
    mids = [math.sqrt(a * b) for a, b in zip(edges, edges[1:])]
    svg = pc.plot(x, y, [pc.bars(edges[:-1], edges[1:], seen, "bar-a"),
                         pc.line(mids, expo, "b", dashed=True)],
                  "time between two arrivals, ms", "arrivals",
                  title="inter-arrival times against the exponential")
    return htmlpage.chart_card("Inter-arrival times", svg,
                           [("ka", "seen"), ("kb", f"Poisson arrivals at {g['rate']:.4g}/s")],
                           "Bursts put arrivals at the far left, pauses at the far right.")


def connections_chart(s):
    c = s["connections"]
    x = pc.axis_for([0, c["t_s"][-1] if c["t_s"] else 1])
    y = pc.axis_for(c["open"])
    svg = pc.plot(x, y, [pc.steps(c["t_s"], c["open"], "a")], "seconds from the first arrival",
                  "connections", title="connections open")
    return htmlpage.chart_card("Connections open", svg,
                               [("ka", "most open at once in each window")])


def latency_chart(s):
    lat = s["latency"]
    share = [q * 100 for q in lat["q"]]
    lines = [("server_ms", "a", "the server")] + \
        ([("client_ms", "b", "the client (its log)")] if "client_ms" in lat else [])
    x = pc.axis_for([v for key, _, _ in lines for v in lat[key]], log=True)
    y = pc.Axis(0, 100)
    svg = pc.plot(x, y, [pc.line(lat[key], share, cls) for key, cls, _ in lines],
                  "latency, ms", "% of requests within", title="latency distribution")
    return htmlpage.chart_card("Latency", svg, [("k" + cls, label) for _, cls, label in lines],
                           "The server's is the time it held each request; a client's figure "
                           "for the same requests can only be higher.")


def write_page(result, path):
    """The page of one judged run."""
    checks = result["checks"]
    n = result.get("requests")
    model = Model(**result["model"]).describe() if result.get("model") else ""
    tiles = [(result["verdict"], "verdict", result["verdict"])]
    if n is not None:
        tiles.append((f"{n:,}", "requests the server saw", None))
    tiles += [(c["verdict"], c["name"].replace("_", " "), c["verdict"]) for c in checks]
    rows = [[htmlpage.verdict(c["verdict"]), htmlpage.esc(c["name"]), htmlpage.esc(c["figure"])
             + (f'<div class="why">why: {htmlpage.esc(c["reason"])}</div>' if c["reason"] else "")]
            for c in checks]
    body = [htmlpage.tiles(tiles), htmlpage.html_table(["verdict", "check", "what was seen"],
                                                       rows, raw=(0, 1, 2))]
    s = result.get("series") or {}
    charts = [f(s) for key, f in (("arrivals", arrivals_chart), ("gaps", gaps_chart),
                                  ("connections", connections_chart), ("latency", latency_chart))
              if s.get(key)]
    if charts:
        body.append('<section class="charts">' + "".join(charts) + "</section>")
    state = htmlpage.esc(f"{model}; notesd at {result.get('server', '?')}")
    footer = ("Written by <code>loadtests/judge</code> from notesd's request journal: every "
              "figure is the server's own record of each request. The checks and their bounds: "
              "<code>loadtests/judge.md</code>.")
    text = htmlpage.document(f"judge: {result['verdict']}", f"judge: {result['verdict']}",
                             state, "\n".join(body), footer)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
