"""Writing results: Markdown tables and JSON files replaced atomically. What a
report says stays with its command; how a table is laid out is here."""
import json
import os


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
