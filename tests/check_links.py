#!/usr/bin/python3
"""Checks every relative link in the repository's Markdown files.

A link to a file or directory must name one that exists, relative to the page
(or to the repository root when it starts with `/`); a link with `#anchor` into
a Markdown file (or `#anchor` alone, into the page itself) must name a heading
of that file by GitHub's rules, or an HTML `id`/`name` in it. Absolute URLs
(`https:`, `mailto:` ...) are not fetched. Links are read from inline links and
images, reference definitions and HTML `href`/`src`, never from code blocks or
code spans. Each broken link is printed as file:line: target: reason, and the
exit status is 1.

GitHub's anchors: the heading's text as rendered (code spans keep their text,
links their label, emphasis markers go), lower-cased; every character that is
not a letter, digit, mark, space, `-` or `_` removed; each space turned into
`-`; a repeated anchor gets `-1`, `-2` ... in page order.

    tests/check_links.py                 check the repository
    tests/check_links.py --root DIR      check DIR
    tests/check_links.py --anchors FILE  print FILE's anchors
"""
import argparse
import os
import re
import sys
import unicodedata
from urllib.parse import unquote

# Directories that hold no page of the project: npm's, builds' and runs' output.
SKIP_DIRS = {"node_modules"}
SKIP_PATHS = {os.path.join("loadtests", "results")}
FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
ATX = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$")
SETEXT = re.compile(r"^ {0,3}(=+|-+)[ \t]*$")
REFDEF = re.compile(r"^ {0,3}\[([^\]]+)\]:[ \t]*<?([^\s>]+)>?")
HTML_ATTR = re.compile(r"""<[a-zA-Z][^>]*?\b(href|src)\s*=\s*["']([^"']*)["']""")
HTML_ID = re.compile(r"""<[a-zA-Z][^>]*?\b(?:id|name)\s*=\s*["']([^"']*)["']""")
SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")


def markdown_files(root):
    """Every *.md below root, sorted, leaving out hidden, build and tool directories."""
    found = []
    for top, dirs, files in os.walk(root):
        rel_top = os.path.relpath(top, root)
        dirs[:] = sorted(d for d in dirs
                         if not d.startswith(".") and d not in SKIP_DIRS
                         and d != "build" and not d.startswith("build-")
                         and os.path.normpath(os.path.join(rel_top, d)) not in SKIP_PATHS)
        found += [os.path.join(top, f) for f in files if f.endswith(".md")]
    return sorted(found)


def strip_code_spans(line):
    """The line with every code span's backticks and text replaced by spaces."""
    out, i = [], 0
    while i < len(line):
        if line[i] == "`":
            n = len(line) - len(line[i:].lstrip("`"))
            ticks = line[i:i + n]
            end = line.find(ticks, i + n)
            while end != -1 and line[end + n:end + n + 1] == "`":
                end = line.find(ticks, end + len(ticks) + 1)
            if end == -1:
                out.append(ticks)
                i += n
                continue
            out.append(" " * (end + n - i))
            i = end + n
        else:
            out.append(line[i])
            i += 1
    return "".join(out)


def lines_outside_code(text):
    """(line number, line) for every line that is not inside a fenced or indented code block."""
    fence = None
    previous_blank = True
    for number, line in enumerate(text.splitlines(), 1):
        m = FENCE.match(line)
        if fence:
            if m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence) \
                    and not line.strip().strip(fence[0]):
                fence = None
            previous_blank = False
            continue
        if m:
            fence = m.group(1)
            continue
        if previous_blank and line.startswith("    ") and line.strip():
            continue  # an indented code block (only after a blank line: else it continues a list)
        previous_blank = not line.strip()
        yield number, line


def rendered_heading_text(raw):
    """A heading's text as GitHub renders it: code spans keep their content, links
    and images their label, HTML tags and emphasis markers go."""
    text = re.sub(r"(`+)(.+?)\1", lambda m: "\0" + m.group(2).strip() + "\0", raw)
    parts = text.split("\0")
    for i in range(0, len(parts), 2):  # outside code spans only
        p = parts[i]
        p = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", p)
        p = re.sub(r"!?\[([^\]]*)\]\[[^\]]*\]", r"\1", p)
        p = re.sub(r"<[^>]+>", "", p)
        p = re.sub(r"(\*\*|__|~~)(.+?)\1", r"\2", p)
        p = re.sub(r"\*(.+?)\*", r"\1", p)
        p = re.sub(r"(?<![0-9A-Za-z])_(.+?)_(?![0-9A-Za-z])", r"\1", p)
        p = p.replace("\\", "")
        parts[i] = p
    return "".join(parts).strip()


def slug(text):
    """GitHub's anchor for a heading's rendered text (without the -N of repeats)."""
    out = []
    for ch in text.lower():
        if ch == " ":
            out.append("-")
        elif ch in "-_":
            out.append(ch)
        elif unicodedata.category(ch)[0] in "LNM":
            out.append(ch)
    return "".join(out)


def anchors(text):
    """Every anchor a page has: its headings' (repeats numbered) and HTML ids and names."""
    seen, found = {}, set()
    lines = list(lines_outside_code(text))
    for index, (number, line) in enumerate(lines):
        heading = None
        m = ATX.match(line)
        if m:
            heading = m.group(2) or ""
        else:
            s = SETEXT.match(line)
            if s and index > 0 and lines[index - 1][0] == number - 1:
                prev = lines[index - 1][1]
                if prev.strip() and not prev.lstrip().startswith(("|", "-", "*", "+", ">", "#")) \
                        and not re.match(r"^\s*\d+[.)]\s", prev) and not SETEXT.match(prev):
                    heading = prev.strip()
        if heading is not None:
            base = slug(rendered_heading_text(heading))
            n = seen.get(base, 0)
            seen[base] = n + 1
            found.add(base if n == 0 else f"{base}-{n}")
        for m in HTML_ID.finditer(line):
            found.add(m.group(1))
    return found


def inline_targets(line):
    """Destinations of the inline links and images on a line (code spans already blanked)."""
    targets = []
    i = 0
    while True:
        i = line.find("](", i)
        if i == -1:
            return targets
        j, depth = i + 2, 1
        while j < len(line) and depth:
            depth += {"(": 1, ")": -1}.get(line[j], 0)
            j += 1
        inside = line[i + 2:j - 1 if depth == 0 else j].strip()
        if inside.startswith("<"):
            dest = inside[1:inside.find(">")] if ">" in inside else inside[1:]
        else:
            dest = inside.split()[0] if inside.split() else ""
        targets.append(dest)
        i = j


def links(text):
    """(line number, target) for every link of a page."""
    for number, line in lines_outside_code(text):
        plain = strip_code_spans(line)
        m = REFDEF.match(plain)
        if m:
            yield number, m.group(2)
            continue
        for target in inline_targets(plain):
            yield number, target
        for m in HTML_ATTR.finditer(plain):
            yield number, m.group(2)


def check(root):
    """Returns the problems as 'file:line: target: reason' lines."""
    root = os.path.abspath(root)
    cache = {}

    def anchors_of(path):
        if path not in cache:
            with open(path, encoding="utf-8") as f:
                cache[path] = anchors(f.read())
        return cache[path]

    problems = []
    for page in markdown_files(root):
        with open(page, encoding="utf-8") as f:
            text = f.read()
        rel_page = os.path.relpath(page, root)
        for number, target in links(text):
            if not target or SCHEME.match(target) or target.startswith("//"):
                continue
            path, _, fragment = target.partition("#")
            path = unquote(path.split("?", 1)[0])
            if path.startswith("/"):
                dest = os.path.normpath(os.path.join(root, path.lstrip("/")))
            elif path:
                dest = os.path.normpath(os.path.join(os.path.dirname(page), path))
            else:
                dest = page
            where = f"{rel_page}:{number}: {target}"
            if not (dest == root or dest.startswith(root + os.sep)):
                problems.append(f"{where}: points outside the repository")
                continue
            if not os.path.exists(dest):
                problems.append(f"{where}: no such file or directory")
                continue
            if fragment and dest.endswith(".md") and os.path.isfile(dest):
                if unquote(fragment) not in anchors_of(dest):
                    problems.append(f"{where}: no heading with anchor #{unquote(fragment)} "
                                    f"in {os.path.relpath(dest, root)}")
    return problems


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--root", default=os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                       ".."))
    parser.add_argument("--anchors", metavar="FILE")
    args = parser.parse_args()
    if args.anchors:
        with open(args.anchors, encoding="utf-8") as f:
            for a in sorted(anchors(f.read())):
                print("#" + a)
        return 0
    pages = markdown_files(args.root)
    problems = check(args.root)
    for p in problems:
        print(p)
    print(f"{len(pages)} Markdown file(s), {len(problems)} broken link(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
