"""Writing results: Markdown tables, JSON files replaced atomically, the number
formats of every report, and the progress lines a command prints while it runs.
What a report says stays with its command; how a table, a figure or a progress
line is laid out is here, once.

The formats keep each report's own conventions: the harness's report and
calibrate write `n/a` for a figure that is missing, bench's report a dash (`–`),
reconcile's text report a hyphen (`-`), calibrate's scorecard `not reported` (a
figure the tool does not give).
"""
import json
import math
import os
import sys
import time


# --------------------------------------------------------------------- files

def table(header, rows):
    """A Markdown table: one header row, a rule, one line per row (cells through str())."""
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(out)


def write_json(path, data, **dump_args):
    """Writes `data` as JSON through a temporary file and a rename, so a reader never
    sees half a file. dump_args go to json.dump (indent, sort_keys, ...)."""
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(data, f, **dump_args)
        f.write("\n")
    os.replace(tmp, path)


# --------------------------------------------------------------------- progress lines

def logger(prefix="", clock=False, stream="stderr"):
    """A command's log(msg): one flushed line per call on sys.stderr (or sys.stdout),
    looked up at each call so a redirected stream is honoured.

        logger("calibrate")               calibrate: msg
        logger("bench", clock=True)       [bench 14:03:07] msg
        logger(stream="stdout")           msg
    """
    def log(msg):
        if clock:
            head = f"[{prefix} {time.strftime('%H:%M:%S')}] "
        else:
            head = f"{prefix}: " if prefix else ""
        print(f"{head}{msg}", file=getattr(sys, stream), flush=True)
    return log


# --------------------------------------------------------------------- numbers

def fmt(v, digits=3):
    """Numbers with `digits` significant digits, thousands separated; '–' for None
    (bench's figures)."""
    if v is None:
        return "–"
    if v == 0:
        return "0"
    if abs(v) >= 10 ** digits:
        return f"{v:,.0f}"
    s = f"{v:.{digits}g}"
    if "e" in s:
        s = f"{v:.{digits + 2}f}"
    return s


def fmt_fixed(v, digits=2, signed=False, missing="n/a"):
    """`digits` decimals, with a sign when `signed`; `missing` ('n/a') for None."""
    if v is None:
        return missing
    return f"{v:+.{digits}f}" if signed else f"{v:.{digits}f}"


def fmt_ratio(r):
    """A ratio with 2 decimals; '–' for None."""
    return "–" if r is None else f"{r:.2f}"


def fmt_int(v):
    """A count or rate without decimals, thousands separated; 'n/a' for None."""
    return "n/a" if v is None else f"{v:,.0f}"


def fmt_pct(v):
    """A figure that is a percentage already (e.g. 85.2 -> '85%'); 'n/a' for None."""
    return "n/a" if v is None else f"{v:.0f}%"


def fmt_share(v, digits=0, missing="–"):
    """A fraction as a percentage (0.852 -> '85%')."""
    return missing if v is None else f"{100 * v:.{digits}f}%"


def fmt_spread(st):
    """The spread of a stat (bench_figures.stat) as a percentage; '–' without one."""
    return fmt_share(st.get("spread") if st else None)


def fmt_range(st, show=None):
    """A stat's median with its range over the rounds, '7,240 (7,100–7,400)'; the median
    alone from one round, '–' without one. st: {"median", "min", "max", "n"} (bench's
    stat(), stats.dispersion()); show formats each number (fmt by default)."""
    show = show or fmt
    if not st or st.get("median") is None:
        return "–"
    if st.get("n", 0) < 2:
        return show(st["median"])
    return f"{show(st['median'])} ({show(st['min'])}–{show(st['max'])})"


def fmt_ms(v):
    """Milliseconds for a report: 2 decimals below 10 ms, 1 above; 'n/a' for None."""
    if v is None:
        return "n/a"
    return f"{v:.1f}" if v >= 10 else f"{v:.2f}"


def fmt_ms_fine(v):
    """Milliseconds for reconcile's text: 3 decimals below 100 ms, 1 above, 'inf' for
    an unbounded bucket, '-' for None."""
    if v is None:
        return "-"
    if v == math.inf:
        return "inf"
    return f"{v:.3f}" if v < 100 else f"{v:.1f}"


def fmt_bound(v):
    """A histogram bucket's bound: None is the last one, +Inf."""
    if v is None:
        return "+Inf"
    return f"{v:g}"


def fmt_mib(v):
    """Mebibytes with the unit: no decimals from 10 MiB, 1 below; 'n/a' for None."""
    if v is None:
        return "n/a"
    return f"{v:.0f} MiB" if v >= 10 else f"{v:.1f} MiB"


def fmt_s(v):
    """A duration in seconds: '1.25 s' from 0.1 s, '12.5 ms' below; 'n/a' for None."""
    if v is None:
        return "n/a"
    return f"{v:.2f} s" if v >= 0.1 else f"{v * 1000:.1f} ms"


def fmt_signed(n):
    """A difference of counts: '+3', '-2', '0'."""
    return f"{n:+d}" if n else "0"
