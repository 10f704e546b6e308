"""Pages a person opens: one self-contained HTML file in the status page's look
(server/dashboard.html: its colours, light and dark, its tiles and cards), with the
verdicts on top and the pictures as inline SVG (pagecharts.py). No script, no font, no
request: the page's Content-Security-Policy allows it to load nothing, so it reads the
same from a file, mailed, or on a machine without a network. judge's report and
calibrate's scorecard are such pages. markdown() turns the Markdown our reports write
(headings, paragraphs, lists, tables, code, bold, links) into the page's HTML, so a
report's text is written once.
"""
import html
import re

VERDICT_CLASS = {"PASS": "pass", "WARN": "warn", "FAIL": "fail", "SKIP": "skip"}

CSS = """
:root { color-scheme: light dark; --fg: #1d2330; --muted: #5b6475; --bg: #f6f7f9;
        --card: #fff; --grid: #e3e6eb; --a: #2864c8; --b: #d9822b; --c: #c23b3b;
        --pass: #2f8a4a; --warn: #b7791f; --fail: #c23b3b; }
@media (prefers-color-scheme: dark) {
  :root { --fg: #e6e9ef; --muted: #9aa3b2; --bg: #14171c; --card: #1d2129; --grid: #2e3440;
          --a: #6ea0ff; --b: #f0a650; --c: #ff6b6b; --pass: #5cc97b; --warn: #f0b840;
          --fail: #ff6b6b; }
}
* { box-sizing: border-box; }
body { margin: 0; padding: 12px; font: 14px/1.45 system-ui, sans-serif; color: var(--fg);
       background: var(--bg); }
header { display: flex; flex-wrap: wrap; align-items: baseline; gap: 4px 16px; margin-bottom: 12px; }
h1 { font-size: 18px; margin: 0; }
h2 { font-size: 16px; margin: 18px 0 8px; }
h3 { font-size: 14px; margin: 14px 0 6px; }
#state { color: var(--muted); overflow-wrap: anywhere; }
.tiles { display: grid; grid-template-columns: repeat(auto-fit, minmax(150px, 1fr)); gap: 8px;
         margin-bottom: 12px; }
.tile { background: var(--card); border-radius: 8px; padding: 8px 10px; border-left: 4px solid var(--grid); }
.tile b { display: block; font-size: 18px; font-variant-numeric: tabular-nums; }
.tile span { color: var(--muted); font-size: 12px; }
.tile.pass { border-left-color: var(--pass); } .tile.warn { border-left-color: var(--warn); }
.tile.fail { border-left-color: var(--fail); }
.v { font-weight: 700; } .v.pass { color: var(--pass); } .v.warn { color: var(--warn); }
.v.fail { color: var(--fail); } .v.skip { color: var(--muted); }
.card { background: var(--card); border-radius: 8px; padding: 8px 10px 10px; margin-bottom: 12px;
        overflow-x: auto; }
.charts { display: grid; grid-template-columns: repeat(auto-fit, minmax(min(100%, 420px), 1fr));
          gap: 12px; margin-bottom: 12px; }
figure { margin: 0; background: var(--card); border-radius: 8px; padding: 8px 10px 10px; min-width: 0; }
figcaption { display: flex; flex-wrap: wrap; gap: 2px 12px; align-items: baseline; margin-bottom: 4px; }
figcaption strong { font-size: 15px; }
.key { color: var(--muted); font-size: 12px; }
.key i { display: inline-block; width: 10px; height: 3px; margin: 0 4px 3px 8px; vertical-align: middle; }
figure p { color: var(--muted); font-size: 12px; margin: 4px 0 0; }
svg { display: block; width: 100%; height: auto; }
svg text { fill: var(--muted); font: 11px system-ui, sans-serif; }
svg .grid { stroke: var(--grid); } svg .axis { stroke: var(--muted); }
svg .a { stroke: var(--a); fill: none; stroke-width: 1.6; } svg .bar-a { fill: var(--a); }
svg .b { stroke: var(--b); fill: none; stroke-width: 1.6; } svg .bar-b { fill: var(--b); }
svg .c { stroke: var(--c); fill: none; stroke-width: 1.6; } svg .bar-c { fill: var(--c); }
svg .dash { stroke-dasharray: 5 4; }
.ka { background: var(--a); } .kb { background: var(--b); } .kc { background: var(--c); }
table { border-collapse: collapse; font-variant-numeric: tabular-nums; }
th, td { text-align: left; padding: 3px 8px; border-bottom: 1px solid var(--grid); vertical-align: top; }
th { color: var(--muted); font-weight: 600; }
code { font: 12px ui-monospace, monospace; }
.why { color: var(--muted); margin-top: 2px; }
a { color: var(--a); }
footer { margin-top: 12px; color: var(--muted); font-size: 12px; }
"""
# What the page may load: nothing (its styles are inline).
POLICY = "default-src 'none'; style-src 'unsafe-inline'; img-src data:"


def esc(text):
    return html.escape(str(text), quote=True)


def verdict(v):
    """A verdict in its colour."""
    return f'<span class="v {VERDICT_CLASS.get(v, "skip")}">{esc(v)}</span>'


def tiles(items):
    """The row of tiles: [(value, label, verdict or None)]."""
    cells = "".join(f'<div class="tile {VERDICT_CLASS.get(v, "")}"><b>{esc(value)}</b>'
                    f'<span>{esc(label)}</span></div>' for value, label, v in items)
    return f'<section class="tiles">{cells}</section>'


def html_table(header, rows, raw=()):
    """A table; cells are text, escaped, except the columns whose index is in `raw`
    (HTML already: a verdict())."""
    head = "".join(f"<th>{esc(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{c if i in raw else esc(c)}</td>"
                                    for i, c in enumerate(row)) + "</tr>" for row in rows)
    return f'<div class="card"><table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>'


def chart_card(title, svg, key=(), note=""):
    """A chart's card: its title, a key [(css class of the swatch, label)], the SVG and a
    line under it."""
    swatches = "".join(f'<i class="{cls}"></i>{esc(label)}' for cls, label in key)
    return (f'<figure><figcaption><strong>{esc(title)}</strong><span class="key">{swatches}'
            f'</span></figcaption>{svg}' + (f"<p>{esc(note)}</p>" if note else "") + "</figure>")


def document(title, heading, state, body, footer=""):
    """The whole page."""
    return (f'<!doctype html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
            f'<meta http-equiv="Content-Security-Policy" content="{POLICY}">\n'
            f'<meta name="viewport" content="width=device-width, initial-scale=1">\n'
            f"<title>{esc(title)}</title>\n<style>{CSS}</style>\n</head>\n<body>\n"
            f'<header><h1>{esc(heading)}</h1><div id="state">{state}</div></header>\n'
            f"{body}\n" + (f"<footer>{footer}</footer>\n" if footer else "")
            + "</body>\n</html>\n")


# ------------------------------------------------------------------ Markdown, our reports' subset

def inline(text):
    """Escapes a line and renders `code`, **bold**, _emphasis_ and [links](url)."""
    parts = re.split(r"(`[^`]*`)", text)
    out = []
    for part in parts:
        if part.startswith("`") and part.endswith("`") and len(part) > 1:
            out.append(f"<code>{esc(part[1:-1])}</code>")
            continue
        s = esc(part)
        s = re.sub(r"\*\*(.+?)\*\*", r"<strong>\1</strong>", s)
        s = re.sub(r"(?<![\w])_(.+?)_(?![\w])", r"<em>\1</em>", s)
        s = re.sub(r"\[([^\]]+)\]\(([^)\s]+)\)", r'<a href="\2">\1</a>', s)
        out.append(s)
    return "".join(out)


def cells(line):
    return [c.strip() for c in line.strip().strip("|").split("|")]


def from_markdown(text):
    """HTML of the Markdown the reports write: # headings, paragraphs, - lists, | tables |."""
    out, para, lines = [], [], text.splitlines()

    def flush():
        if para:
            out.append(f"<p>{inline(' '.join(para))}</p>")
            para.clear()
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("|") and i + 1 < len(lines) and re.match(r"^\|[-:| ]+\|$", lines[i + 1]):
            flush()
            header, rows = cells(line), []
            i += 2
            while i < len(lines) and lines[i].startswith("|"):
                rows.append([inline(c) for c in cells(lines[i])])
                i += 1
            out.append(html_table(header, rows, raw=range(len(header))))
            continue
        m = re.match(r"^(#{1,4}) (.*)", line)
        if m:
            flush()
            level = min(len(m.group(1)) + 1, 4)
            out.append(f"<h{level}>{inline(m.group(2))}</h{level}>")
        elif line.startswith("- "):
            flush()
            items = []
            while i < len(lines) and (lines[i].startswith("- ") or lines[i].startswith("  ")):
                if lines[i].startswith("- "):
                    items.append(lines[i][2:])
                else:
                    items[-1] += " " + lines[i].strip()
                i += 1
            out.append("<ul>" + "".join(f"<li>{inline(t)}</li>" for t in items) + "</ul>")
            continue
        elif not line.strip():
            flush()
        else:
            para.append(line.strip())
        i += 1
    flush()
    return "\n".join(out)
