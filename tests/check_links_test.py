#!/usr/bin/python3
"""The link checker must compute GitHub's anchors, fail on a missing file or
anchor (naming the line), and pass links it cannot or need not check."""
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
CHECKER = os.path.join(HERE, "check_links.py")
sys.path.insert(0, HERE)
import check_links  # noqa: E402

failures = 0
count = 0


def report(name, ok, detail=""):
    global failures, count
    count += 1
    print(("ok   " if ok else "FAIL ") + name)
    if not ok:
        failures += 1
        print("  " + detail)


def run(files):
    with tempfile.TemporaryDirectory() as root:
        for name, text in files.items():
            path = os.path.join(root, name)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w", encoding="utf-8") as f:
                f.write(text)
        p = subprocess.run([sys.executable, CHECKER, "--root", root], capture_output=True,
                           text=True)
        return p.returncode, p.stdout


def expect(name, files, status, *needles):
    rc, out = run(files)
    report(name, rc == status and all(n in out for n in needles),
           f"status {rc}, wanted {status}; output:\n{out}")


# Anchors as GitHub makes them (the first column is the heading line).
for heading, anchor in [
    ("## Queries: unnamed or prepared, one at a time or pipelined",
     "queries-unnamed-or-prepared-one-at-a-time-or-pipelined"),
    ("### Known latency: `/delay/:ms`", "known-latency-delayms"),
    ("## The concurrency sweep (`--sweep`)", "the-concurrency-sweep---sweep"),
    ("### Paths as Express's router matches them", "paths-as-expresss-router-matches-them"),
    ("### HTTP/2 and TLS", "http2-and-tls"),
    ("## The life of one `GET /notes/:id`", "the-life-of-one-get-notesid"),
    ("## `notes_db_pool_connections` and *friends*", "notes_db_pool_connections-and-friends"),
    ("## **Bold** [link](x.md) here", "bold-link-here"),
    ("## snake_case stays", "snake_case-stays"),
    ("## Größe — 100 µs", "größe--100-µs"),
    ("# Closing hashes ##", "closing-hashes"),
]:
    got = check_links.anchors(heading + "\n")
    report(f"anchor of {heading!r}", got == {anchor}, f"got {got}, wanted {{{anchor!r}}}")

got = check_links.anchors("# A\n\n## A\n\ntext\n\n### A\n\nSetext\n======\n\n```\n# not a heading\n```\n")
report("repeats_numbered_setext_read_fences_skipped", got == {"a", "a-1", "a-2", "setext"}, str(got))

expect("clean_tree_passes",
       {"README.md": "# Top\n\nSee [the guide](docs/guide.md#the-part), [a dir](docs/), "
                     "[here](#top), ![pic](docs/p.svg), <a href=\"docs/guide.md\">x</a>,\n"
                     "[an issue](https://example.com/x.md#nothing) and [mail](mailto:a@b).\n\n"
                     "[ref]: docs/guide.md#the-part\n",
        "docs/guide.md": "# Guide\n\n## The part\n\nBack to [the top](../README.md#top) "
                         "and [root](/README.md).\n",
        "docs/p.svg": "<svg/>"},
       0, "2 Markdown file(s), 0 broken link(s)")
expect("missing_file_names_the_line",
       {"README.md": "# Top\n\ntext\n\nSee [gone](docs/gone.md).\n"}, 1,
       "README.md:5: docs/gone.md: no such file or directory")
expect("missing_anchor_names_the_heading_file",
       {"README.md": "# Top\n\n[x](b.md#no-such-part)\n", "b.md": "# B\n\n## Some part\n"}, 1,
       "README.md:3: b.md#no-such-part: no heading with anchor #no-such-part in b.md")
expect("missing_anchor_in_the_same_page",
       {"README.md": "# Top\n\n[x](#tpo)\n"}, 1, "README.md:3: #tpo: no heading")
expect("reference_definition_checked",
       {"README.md": "# Top\n\n[x][r]\n\n[r]: nowhere.md\n"}, 1, "README.md:5: nowhere.md")
expect("image_checked",
       {"README.md": "# Top\n\n![x](missing.png)\n"}, 1, "README.md:3: missing.png")
expect("html_href_checked",
       {"README.md": "# Top\n\n<a href=\"nope.md\">x</a>\n"}, 1, "README.md:3: nope.md")
expect("code_is_not_read",
       {"README.md": "# Top\n\n`[x](nope.md)` and\n\n```md\n[y](nope.md)\n```\n\n"
                     "    [z](nope.md)\n"}, 0, "0 broken link(s)")
expect("html_id_is_an_anchor",
       {"README.md": "# Top\n\n<a id=\"here\"></a>\n\n[x](#here)\n"}, 0, "0 broken link(s)")
expect("outside_the_repository_fails",
       {"README.md": "# Top\n\n[x](../../etc/passwd)\n"}, 1, "points outside the repository")
expect("node_modules_and_builds_skipped",
       {"README.md": "# Top\n", "node_modules/p/README.md": "[x](gone.md)\n",
        "build-test/x.md": "[x](gone.md)\n"}, 0, "1 Markdown file(s), 0 broken link(s)")

print(f"{count - failures} passed, {failures} failed")
sys.exit(1 if failures else 0)
