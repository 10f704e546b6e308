#!/usr/bin/python3
"""The API reference rendered from its one source, docs/openapi.json: the page
docs/api-reference.md (every operation: what it answers, its parameters with the
values notesd accepts, its statuses) and the route tables of docs/api.md (under
"## Routes") and docs/metrics.md (under "## The port"), one row per route
linking to its entry, between the lines

    <!-- routes: generated from docs/openapi.json by tests/openapi/reference.py; edit there -->
    <!-- end of routes -->

A route's prose is changed in docs/openapi.json, never in the pages.
tests/check_route_tables.py holds the tables to server/routes.h, and
openapi/check_routes.py the description, so the three cannot drift apart.

    tests/openapi/reference.py           the check: each page is what it writes
                                         (CTest style_api_reference), or a diff
    tests/openapi/reference.py --write   rewrites the page and the tables
"""
import difflib
import json
import os
import re
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SOURCE = os.path.join(REPO, "docs", "openapi.json")
PAGE = "docs/api-reference.md"
BEGIN = "<!-- routes: generated from docs/openapi.json by tests/openapi/reference.py; edit there -->"
END = "<!-- end of routes -->"
# (page, the port its table lists): the API port's paths name no servers of their own.
TABLES = [("docs/api.md", "api"), ("docs/metrics.md", "metrics")]
METHODS = ("get", "put", "post", "delete", "patch", "options")  # HEAD goes with GET


def ref(doc, node):
    """`node` with its $ref followed, and the name it had (None when none)."""
    if isinstance(node, dict) and "$ref" in node:
        name = node["$ref"].rsplit("/", 1)[1]
        target = doc
        for part in node["$ref"].lstrip("#/").split("/"):
            target = target[part]
        return target, name
    return node, None


def template(path):
    """The route table's form of a path: `{id}` is `:id`, a file under /static `…`."""
    return re.sub(r"\{(\w+)\}", r":\1", path.replace("/{file}", "/…"))


def anchor(text):
    """GitHub's anchor of a heading (tests/check_links.py reads them the same way)."""
    text = text.strip().lower().replace("`", "")
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def cell(text):
    return " ".join(str(text).split()).replace("|", "\\|")


def number(n):
    return f"{n:,}" if abs(n) >= 10_000 else str(n)


def values(doc, schema):
    """What a parameter accepts, in words: a range, a list, a constant or a kind."""
    schema, name = ref(doc, schema)
    if "enum" in schema:
        return ", ".join(f"`{v}`" for v in schema["enum"])
    if "const" in schema:
        return f"`{schema['const']}`"
    if schema.get("type") == "integer":
        low, high = schema.get("minimum"), schema.get("maximum")
        if low is not None and high is not None:
            return f"{number(low)} … {number(high)}"
        return "a whole number"
    if name:
        return f"[{name}](#{anchor(name)})"
    if "pattern" in schema and len(schema["pattern"]) <= 24:
        return f"text matching `{schema['pattern']}`"
    return "text"


def parameters(doc, op):
    """[(name, where, values, default, required, meaning)], an exploded object's
    properties each on a row of its own."""
    rows = []
    for p in op.get("parameters", []):
        p, _ = ref(doc, p)
        schema, _ = ref(doc, p["schema"])
        if schema.get("type") == "object" and p.get("explode", True) and "properties" in schema:
            for prop, sub in schema["properties"].items():
                rows.append((prop, p["in"], values(doc, sub), sub.get("default"),
                             prop in schema.get("required", []), sub.get("description", "")))
            continue
        rows.append((p["name"], p["in"], values(doc, p["schema"]), schema.get("default"),
                     p.get("required", False), p.get("description", "")))
    return rows


def status_order(code):
    return (code[0], 0 if code[1:].isdigit() else 1, code)


def operation(doc, method, path, op):
    out = [f"### `{method.upper()} {template(path)}`", "", op["summary"] + "."]
    if op.get("description"):
        out[-1] += " " + op["description"]
    rows = parameters(doc, op)
    for p in op.get("parameters", []):
        p, _ = ref(doc, p)
        if ref(doc, p["schema"])[0].get("type") == "object" and p.get("description"):
            out += ["", f"`{p['name']}`: {p['description']}"]  # an exploded object's rows follow
    if rows:
        out += ["", "| parameter | in | values | default | meaning |", "|---|---|---|---|---|"]
        for name, where, accepted, default, required, meaning in rows:
            shown = "required" if required else ("" if default is None else f"`{default}`")
            out.append(f"| {f'`{name}`' if name else ''} | {where} | {accepted} | {shown} | "
                       f"{cell(meaning)} |")
    if "requestBody" in op:
        body, _ = ref(doc, op["requestBody"])
        kinds = []
        for media, content in body.get("content", {}).items():
            _, name = ref(doc, content.get("schema", {}))
            kinds.append(f"`{media}`" + (f" ([{name}](#{anchor(name)}))" if name else ""))
        out += ["", f"Body: {', '.join(kinds)}. {cell(body.get('description', ''))}".rstrip()]
    out += ["", "| status | answer |", "|---|---|"]
    for code in sorted(op["responses"], key=status_order):
        answer, name = ref(doc, op["responses"][code])
        out.append(f"| {code} | " + (f"[{name}](#{anchor(name)})" if name else answer_text(answer))
                   + " |")
    return out + [""]


def answer_text(answer):
    """A response's description, then its body's schema by name, or its media type
    when it is not JSON, the default."""
    shown = []
    for media, content in answer.get("content", {}).items():
        schema = content.get("schema", {})
        names = [x["$ref"].rsplit("/", 1)[1] for x in [schema, *schema.get("oneOf", [])]
                 if "$ref" in x]
        shown += [f"[{n}](#{anchor(n)})" for n in names]
        if media != "application/json":
            shown.append(f"`{media}`")
    return cell(answer["description"]) + (f" ({', '.join(shown)})" if shown else "")


def port_of(item):
    return "metrics" if any("metrics" in s.get("description", "").lower()
                            for s in item.get("servers", [])) else "api"


def operations(doc, port):
    for path, item in doc["paths"].items():
        if port_of(item) != port:
            continue
        for method in METHODS:
            if method in item:
                yield method, path, item, item[method]


def reference(doc):
    """The whole page, docs/api-reference.md."""
    info = doc["info"]
    out = [f"<!-- generated by tests/openapi/reference.py from docs/openapi.json; edit there, then "
           "run it with --write -->",
           "# API reference", "",
           f"Every route of notesd {info['version']}, as [docs/openapi.json](openapi.json) "
           "describes it. What the routes are for, and the rules every route shares, are in "
           "[api.md](api.md) and [metrics.md](metrics.md).", "",
           info["description"].split("\n\n", 1)[1], ""]
    for port, title in (("api", "The API port"), ("metrics", "The metrics port")):
        out += [f"## {title}", ""]
        for method, path, item, op in operations(doc, port):
            out += operation(doc, method, path, op)
            if item.get("x-any-method"):
                out += ["Any other method is answered as GET is (`x-any-method`).", ""]
    out += ["## Shared answers", "",
            "Answers that several routes give, each the same wherever it is given.", ""]
    for name, answer in doc["components"]["responses"].items():
        out += [f"### {name}", "", answer_text(answer), ""]
    out += ["## Schemas", ""]
    for name, schema in doc["components"]["schemas"].items():
        line = " ".join(schema.get("description", "").split())
        props = schema.get("properties")
        if props:
            line += (" Fields: " + ", ".join(
                f"`{p}`" + (f" ({' '.join(v['description'].split())})" if isinstance(v, dict)
                            and v.get("description") else "") for p, v in props.items()) + ".")
        out += [f"### {name}", "", line.strip(), ""]
    return "\n".join(out).rstrip("\n") + "\n"


def table(doc, port):
    """The route table of one port, between the markers."""
    out = [BEGIN, "| route | answer |", "|---|---|"]
    for method, path, _item, op in operations(doc, port):
        heading = f"{method.upper()} {template(path)}"
        out.append(f"| `{heading}` | [{op['summary']}](api-reference.md#{anchor(heading)}) |")
    return "\n".join(out + [END])


def rendered():
    """{page: text it should have}."""
    with open(SOURCE, encoding="utf-8") as f:
        doc = json.load(f)
    pages = {PAGE: reference(doc)}
    for page, port in TABLES:
        with open(os.path.join(REPO, page), encoding="utf-8") as f:
            text = f.read()
        if text.count(BEGIN) != 1 or text.count(END) != 1:
            raise ValueError(f"{page}: the route table must sit between one line {BEGIN!r} and "
                             f"one {END!r}")
        head, rest = text.split(BEGIN, 1)
        pages[page] = head + table(doc, port) + rest.split(END, 1)[1]
    return pages


def main():
    try:
        pages = rendered()
    except ValueError as e:
        print(e)
        return 1
    failed = 0
    for page, want in pages.items():
        path = os.path.join(REPO, page)
        have = open(path, encoding="utf-8").read() if os.path.exists(path) else ""
        if have == want:
            continue
        if "--write" in sys.argv:
            with open(path, "w", encoding="utf-8") as f:
                f.write(want)
            print(f"{page}: written")
            continue
        failed += 1
        sys.stdout.writelines(difflib.unified_diff(have.splitlines(True), want.splitlines(True),
                                                   f"{page} (committed)", f"{page} (rendered)"))
    if failed:
        print("\nthe pages differ from docs/openapi.json; rewrite them with\n"
              "  tests/openapi/reference.py --write")
        return 1
    print(f"{len(pages)} pages are what docs/openapi.json renders")
    return 0


if __name__ == "__main__":
    sys.exit(main())
