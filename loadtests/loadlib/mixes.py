"""loadtests/mixes.json, read once: the 8 tags, the seeded note body, the id range
and each mode's shares of the request kinds. The k6 and wrk scripts carry the
same numbers (k6/test_mix.mjs checks that they agree); the Python side reads
them here."""

import json

from . import paths

MIXES_JSON = paths.loadtests("mixes.json")

with open(MIXES_JSON) as _f:
    MIXES = json.load(_f)

TAGS = list(MIXES["tags"])                                  # row N of the seed has TAGS[N % 8]
NOTE_BODY = MIXES["noteBody"] * MIXES["noteBodyRepeat"]     # the body of every seeded note
MAX_ID = MIXES["maxId"]                                     # ids the load draws from: 1..MAX_ID


def kind_shares(mode):
    """The request kinds of a mode with their shares (fractions adding up to 1); a mode
    made of modes ("mixed" is 80% "read", 20% "write") is expanded down to the kinds."""
    modes = MIXES["modes"]
    out = {}

    def walk(key, weight):
        if key not in modes:
            out[key] = out.get(key, 0.0) + weight
            return
        total = sum(w for _, w in modes[key])
        for sub, w in modes[key]:
            walk(sub, weight * w / total)
    walk(mode, 1.0)
    return out
