"""docs/openapi.json as data: its operations, what makes a request to one of them
valid, Hypothesis strategies for valid and invalid requests, and what an answer
must look like to be one the description allows.

Everything here is read from the document, so a parameter, a bound or a
response added there is generated and checked without a change here. The few
facts the description can only state in prose are in PROSE below, each tied to
the words that state it. A schema keyword the generator does not know makes it
fail loudly (NotImplementedError), never skip.

Requests are kept as text, the way they travel: a parameter's value is the text
sent (percent-encoded on the wire), and it is judged by reading it back as the
description says (an integer parameter's text is an integer when it is one,
leading zeros and all, and a string otherwise), then validating it with
jsonschema against the parameter's schema (JSON Schema 2020-12, OpenAPI 3.1's
dialect).
"""
import json
import os
import re
import tempfile
import urllib.parse
import zlib

import jsonschema
from hypothesis import assume, find, settings, strategies as st
from hypothesis.configuration import set_hypothesis_home_dir

# Hypothesis keeps a cache of Unicode's tables (no examples: every settings here has
# database=None) in a directory it would otherwise make wherever the test runs.
set_hypothesis_home_dir(os.path.join(tempfile.gettempdir(), f"notesd-hypothesis-{os.getuid()}"))

REPO = os.environ.get("NOTESD_REPO") or os.path.dirname(
    os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DOC_PATH = os.path.join(REPO, "docs", "openapi.json")
METHODS = ("get", "head", "put", "post")
# The response bodies notesd writes itself when it refuses a request's input.
REFUSALS = ("BadRequest", "PayloadTooLarge", "UnsupportedMediaType")
REFUSAL_STATUSES = (400, 413, 415, 426)
# A valid request's millisecond parameters are drawn from the bottom of their range,
# so that no answer waits long; the edges pass sends their upper bounds.
DURATION_CAP = 20
# The text of an integer: digits (leading zeros allowed), or a minus and a non-zero
# number; anything else ("-0", "+1", "1.5", " 1") is a string, which no integer
# schema accepts.
INTEGER_TEXT = re.compile(r"[0-9]+|-[0-9]*[1-9][0-9]*")
# Numbers worth sending to any parameter: around the bigint and uint64 limits,
# zeros and a sign.
NUMERIC_EDGES = ["0", "00", "1", "-1", "9223372036854775807", "0009223372036854775807",
                 "9223372036854775808", "18446744073709551615", "18446744073709551616",
                 "9" * 30, "", "x", "1.5", "1e3", "+1", " 1"]
# How deep a recursive schema (a $ref inside what it names) is followed when drawing.
REF_DEPTH = 3
# Hypothesis's settings for find(): the smallest value, the same on every run.
_QUIET = settings(database=None, derandomize=True)


class Prose:
    """A rule the description states in words that JSON Schema cannot say, for the
    operations of `path`: `phrase` must appear in the GET operation's description;
    `holds(values)` judges a request's parameter values; `after` is a request
    (method, target) sent after every request to the path, to undo its effect."""

    def __init__(self, path, phrase, holds=None, after=None):
        self.path, self.phrase, self.holds, self.after = path, phrase, holds, after


PROSE = [
    Prose("/stall", "`every_ms` is at least 2·`ms`",
          holds=lambda v: not ("ms" in v and "every_ms" in v) or v["every_ms"] >= 2 * v["ms"]),
    Prose("/stall", "`for_ms=0` cancels", after=("GET", "/stall?for_ms=0")),
]


_doc = None  # the document that references resolve in: load()'s


def load(path=DOC_PATH):
    global _doc
    with open(path, encoding="utf-8") as f:
        _doc = json.load(f)
    return _doc


def pointer(doc, ref):
    """The node a local "#/a/b" reference names."""
    if not ref.startswith("#/"):
        raise NotImplementedError(f"only local references: {ref}")
    node = doc
    for part in ref[2:].split("/"):
        node = node[part.replace("~1", "/").replace("~0", "~")]
    return node


def inline(doc, node, within=()):
    """`node` with every $ref replaced by what it names, but for a reference inside
    what it names (a recursive schema), which stays for validator() and
    values_for() to follow."""
    if isinstance(node, dict):
        if "$ref" in node:
            if node["$ref"] in within:
                return node
            return inline(doc, pointer(doc, node["$ref"]), within + (node["$ref"],))
        return {k: inline(doc, v, within) for k, v in node.items()}
    if isinstance(node, list):
        return [inline(doc, v, within) for v in node]
    return node


def validator(schema):
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema,
                                           resolver=jsonschema.RefResolver("", _doc or {}))


def is_duration(name, description):
    """A parameter in milliseconds: named so, or described so."""
    return name == "ms" or name.endswith("_ms") or "millisecond" in description.lower()


def is_field_value(text):
    """Text an HTTP header can carry as it is: visible ASCII and inner spaces."""
    return all(" " <= c <= "~" for c in text) and text == text.strip()


class Location:
    """One place a request carries a value: a path, query or header parameter, or a
    property of a query parameter of type object (form style, exploded: each
    property is a query parameter of its own)."""

    def __init__(self, where, name, schema, description="", example=None):
        self.where, self.name, self.schema = where, name, schema
        self.description = description
        self.example = example
        self.check = validator(schema)
        self.duration = is_duration(name, description)

    def read(self, text):
        """The JSON value the description reads from `text`."""
        types = self.schema.get("type")
        types = types if isinstance(types, list) else [types]
        if "integer" in types and INTEGER_TEXT.fullmatch(text):
            return int(text)
        return text

    def __repr__(self):
        return f"{self.where} {self.name}"


class Param:
    """A parameter of an operation; `locations` is itself, or its properties when it is
    an exploded object."""

    def __init__(self, raw):
        self.name, self.where = raw["name"], raw["in"]
        self.required = raw.get("required", False)
        self.schema = raw["schema"]
        self.raw = raw
        self.no_response = raw.get("x-no-response", False)
        self.check = validator(self.schema)
        self.bag = self.schema.get("type") == "object"
        # left out, it would wait its default: a valid request always sends it
        self.slow_default = is_duration(self.name, raw.get("description", "")) and \
            self.schema.get("default", 0) > DURATION_CAP
        if self.bag:
            if self.where != "query" or raw.get("style", "form") != "form" or \
                    not raw.get("explode", True):
                raise NotImplementedError(f"object parameter {self.name}: only exploded form")
            self.locations = [Location("query", k, s, s.get("description", ""))
                              for k, s in self.schema.get("properties", {}).items()]
        else:
            self.locations = [Location(self.where, self.name, self.schema,
                                       raw.get("description", ""), raw.get("example"))]


class Response:
    def __init__(self, code, raw, ref):
        self.code, self.raw, self.ref = code, raw, ref
        self.headers = {k.lower(): (h.get("required", False), validator(h.get("schema", {})))
                        for k, h in raw.get("headers", {}).items()}
        self.content = {media.lower(): validator(m.get("schema", {}))
                        for media, m in raw.get("content", {}).items()}

    @property
    def refusal(self):
        return self.ref in REFUSALS

    @property
    def error_only(self):
        """Every body this answer may have is an Error."""
        return bool(self.content) and all(
            c.schema.get("required") == ["error"] and "oneOf" not in c.schema
            for c in self.content.values())


class Operation:
    def __init__(self, doc, path, method, item):
        raw = inline(doc, item[method])
        self.path, self.method, self.raw = path, method.upper(), raw
        self.op_id = raw["operationId"]
        ports = {v.get("default") for s in item.get("servers", [])
                 for k, v in s.get("variables", {}).items() if k == "port"}
        self.port = "metrics" if ports == {"9091"} else "api"
        self.params = [Param(p) for p in raw.get("parameters", [])]
        self.locations = [loc for p in self.params for loc in p.locations]
        body = raw.get("requestBody")
        self.body_required = bool(body and body.get("required"))
        self.body = None
        if body:
            media = {k.lower(): v for k, v in body["content"].items()}
            if list(media) != ["application/json"]:
                raise NotImplementedError(f"{self.op_id}: request bodies other than JSON")
            self.body = validator(media["application/json"]["schema"])
            self.body_schema = media["application/json"]["schema"]
            self.body_example = media["application/json"].get("example")
            self.body_values = values_for(self.body_schema)
        self.responses = {}
        for code, r in item[method]["responses"].items():
            ref = r["$ref"].rsplit("/", 1)[1] if "$ref" in r else None
            self.responses[code] = Response(code, inline(doc, r), ref)
        self.any_method = item.get("x-any-method", False)
        self.prose = [p for p in PROSE if p.path == path]

    def response(self, status):
        """The description of an answer with this status: exact, then its range, then
        default; None when it is not described."""
        for key in (str(status), f"{status // 100}XX", "default"):
            if key in self.responses:
                return self.responses[key]
        return None

    def __repr__(self):
        return f"{self.method} {self.path} ({self.op_id})"


def operations(doc):
    ops = []
    for path, item in doc["paths"].items():
        for method in METHODS:
            if method in item:
                ops.append(Operation(doc, path, method, item))
    for op in ops:
        op.twin = next((o for o in ops if o.path == op.path and o.method == "GET"), None) \
            if op.method == "HEAD" else None
    unknown = {m for item in doc["paths"].values() for m in item
               if m not in METHODS + ("servers", "parameters", "summary", "description")
               and not m.startswith("x-")}
    if unknown:
        raise NotImplementedError(f"operations of methods {unknown}")
    return ops


class Request:
    """A request to an operation, as text: `values` maps each location to the text it
    carries (absent: not sent); `body` is bytes or None."""

    def __init__(self, op, values, body=None, content_type="application/json"):
        self.op, self.values, self.body, self.content_type = op, values, body, content_type

    def target(self):
        path = self.op.path
        query = []
        for loc, text in self.values.items():
            if loc.where == "path":
                path = path.replace("{" + loc.name + "}", urllib.parse.quote(text, safe=""))
            elif loc.where == "query":
                query.append(urllib.parse.quote(loc.name, safe="") + "=" +
                             urllib.parse.quote(text, safe=""))
        return path + ("?" + "&".join(query) if query else "")

    def headers(self):
        hs = [(loc.name, text) for loc, text in self.values.items() if loc.where == "header"]
        if self.body is not None and self.content_type is not None:
            hs.append(("Content-Type", self.content_type))
        return hs

    def no_response_allowed(self):
        return any(p.no_response and any(loc in self.values for loc in p.locations)
                   for p in self.op.params)

    def __repr__(self):
        text = f"{self.op.method} {self.target()}"
        for k, v in self.headers():
            text += f" | {k}: {v}"
        if self.body is not None:
            text += f" | body {self.body[:300]!r}"
        return text


def judge(req):
    """None when the description calls the request valid, else why it does not."""
    op, values = req.op, req.values
    flat = {}
    for p in op.params:
        present = [loc for loc in p.locations if loc in values]
        if not present:
            if p.required:
                return f"{p.where} parameter {p.name} is required"
            continue
        for loc in present:
            if loc.where == "path" and values[loc] == "":
                return f"path parameter {loc.name} is empty"
            if loc.where == "header" and not is_field_value(values[loc]):
                return f"header {loc.name} cannot carry {values[loc]!r}"
            flat[loc.name] = loc.read(values[loc])
        value = {loc.name: flat[loc.name] for loc in present} if p.bag else flat[p.name]
        error = jsonschema.exceptions.best_match(p.check.iter_errors(value))
        if error is not None:
            return f"{p.where} parameter {p.name}={value!r}: {error.message}"
    for rule in op.prose:
        if rule.holds is not None and not rule.holds(flat):
            return f"the description says {rule.phrase}"
    if op.body is None:
        return None if req.body is None else "a body the operation does not take"
    if req.body is None:
        return "the request body is required" if op.body_required else None
    if req.content_type is None or \
            req.content_type.split(";")[0].strip().lower() != "application/json":
        return f"content type {req.content_type!r} is not application/json"
    try:
        body = json.loads(req.body.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return "the body is not JSON"
    error = jsonschema.exceptions.best_match(op.body.iter_errors(body))
    return None if error is None else f"body: {error.message}"


# ---- strategies ------------------------------------------------------------------------------

def _sendable(text):
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False  # a lone surrogate: no UTF-8 for it
    return True




def values_for(schema, duration=False):
    """JSON values that match `schema` (filtered through it, so a keyword the strategy
    only approximates still yields valid values)."""
    check = validator(schema)
    return _values(schema, duration).filter(check.is_valid)


def _values(schema, duration, depth=0):
    if "$ref" in schema:  # recursive: its branches that go deeper stop at REF_DEPTH
        if depth >= REF_DEPTH:
            return st.nothing()
        return _values(pointer(_doc, schema["$ref"]), False, depth + 1)
    if "const" in schema:
        return st.just(schema["const"])
    if "enum" in schema:
        return st.sampled_from(schema["enum"])
    for key in ("oneOf", "anyOf"):
        if key in schema:
            return st.one_of([_values(s, duration, depth) for s in schema[key]])
    kind = schema.get("type")
    if isinstance(kind, list):
        return st.one_of([_values({**schema, "type": k}, duration, depth) for k in kind])
    if kind == "null":
        return st.none()
    if kind == "boolean":
        return st.booleans()
    if kind == "number":
        return st.integers() | st.floats(allow_nan=False, allow_infinity=False)
    if kind == "array":
        items = _values(schema.get("items", {}), False, depth)
        return st.just([]) if items.is_empty else st.lists(items, max_size=3)
    if kind == "integer":
        lo = schema.get("minimum", 0)
        hi = schema.get("maximum", lo + 10**6)
        return st.integers(lo, min(hi, lo + DURATION_CAP) if duration else hi)
    if kind == "string":
        if "pattern" in schema:
            return st.from_regex(schema["pattern"], fullmatch=True)
        return st.text(min_size=schema.get("minLength", 0), max_size=schema.get("maxLength", 30))
    if kind == "object":
        props = schema.get("properties", {})
        required = set(schema.get("required", []))
        fixed = {k: _values(s, False, depth) for k, s in props.items() if k in required}
        optional = {k: _values(s, False, depth) for k, s in props.items() if k not in required}
        objects = st.fixed_dictionaries(fixed, optional=optional)
        more = schema.get("additionalProperties", True)
        if more is not False:
            names = _values({"type": "string", **schema.get("propertyNames", {})}, False)
            values = json_values() if more is True else _values(more, False, depth)
            if not values.is_empty:
                extra = st.dictionaries(names.filter(lambda k: k not in props), values,
                                        max_size=2)
                objects = st.tuples(objects, extra).map(lambda t: {**t[1], **t[0]})
        return objects
    raise NotImplementedError(f"no strategy for the schema {schema}")


def json_values():
    return st.recursive(
        st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False,
                                                              allow_infinity=False) | st.text(),
        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner,
                                                                   max_size=3),
        max_leaves=6)


def text_of(value):
    return value if isinstance(value, str) else json.dumps(value)


def location_text(loc, valid=True):
    """Texts for a location: what its schema allows (valid), or anything worth trying.
    Made once per location: Hypothesis checks a strategy when it is first drawn from,
    which for a long pattern costs more than the draws."""
    key = (loc, valid)
    if key not in _texts:
        _texts[key] = _location_text(loc, valid)
    return _texts[key]


_texts = {}


def _location_text(loc, valid):
    if valid:
        texts = values_for(loc.schema, loc.duration).map(text_of)
        if loc.example is not None:
            texts = st.just(text_of(loc.example)) | texts
    else:
        near = []
        if loc.schema.get("type") == "integer":
            lo, hi = loc.schema.get("minimum"), loc.schema.get("maximum")
            near = [str(v) for v in (lo, hi) if v is not None]
            near += [str(v) for v in ((lo - 1) if lo is not None else None,
                                      (hi + 1) if hi is not None else None) if v is not None]
        texts = st.one_of(st.sampled_from(near + NUMERIC_EDGES), st.integers().map(str),
                          st.text(max_size=12),
                          values_for(loc.schema).map(text_of).flatmap(_mutations))
    texts = texts.filter(_sendable)
    if loc.where == "header":
        texts = texts.map(str.strip).filter(is_field_value)
    return texts


def _mutations(text):
    """A valid text changed a little: a character added, dropped or its case flipped."""
    return st.one_of(st.just(text + "0"), st.just(text[1:]), st.just(text.swapcase()),
                     st.just(" " + text), st.just(text + "x"))


def valid_requests(op):
    """Requests the description calls valid (one strategy per operation)."""
    if op not in _valid:
        _valid[op] = _valid_requests(op)
    return _valid[op]


_valid = {}


@st.composite
def _valid_requests(draw, op):
    values = {}
    for p in op.params:
        if not (p.required or p.slow_default) and not draw(st.booleans()):
            continue
        if p.bag:
            required = set(p.schema.get("required", []))
            for loc in p.locations:
                if loc.name in required or draw(st.booleans()):
                    values[loc] = draw(location_text(loc))
        else:
            values[p.locations[0]] = draw(location_text(p.locations[0]))
    body = None
    if op.body is not None and (op.body_required or draw(st.booleans())):
        body = json.dumps(draw(op.body_values)).encode()
    req = Request(op, values, body)
    why = judge(req)
    assume(why is None)
    return req


@st.composite
def invalid_requests(draw, op):
    """A valid request with one thing broken: a parameter's value, a required
    parameter left out, or the body (not JSON, not what the schema says, sent with
    another type, or left out)."""
    req = draw(valid_requests(op))
    values, body, ctype = dict(req.values), req.body, req.content_type
    breaks = [("value", loc) for loc in op.locations]
    # (a path parameter is never left out: its empty text is one of the values tried)
    breaks += [("missing", p) for p in op.params if p.required and p.where != "path"]
    if op.body is not None:
        breaks += [("body", None), ("not json", None), ("type", None)]
        if op.body_required:
            breaks.append(("no body", None))
    assume(breaks)
    kind, what = draw(st.sampled_from(breaks))
    if kind == "value":
        values[what] = draw(location_text(what, valid=False))
    elif kind == "missing":
        for loc in what.locations:
            values.pop(loc, None)
    elif kind == "body":
        body = json.dumps(draw(json_values())).encode()
    elif kind == "not json":
        body = draw(st.sampled_from([b"", b"{", b"{title:", b"[1,", b'{"title":"a\x00"}']))
    elif kind == "type":
        ctype = draw(st.sampled_from(["text/plain", "application/x-www-form-urlencoded", None]))
        body = body if body is not None else b"{}"
    else:
        body = None
    bad = Request(op, values, body, ctype)
    assume(judge(bad) is not None)
    return bad


def minimal_request(op):
    """Every required parameter at its example (or its smallest value), nothing else;
    the body's example (or its smallest value)."""
    values = {}
    for p in op.params:
        if not p.required:
            continue
        example = p.raw.get("example")
        if p.bag:
            for loc in p.locations:
                if example is not None and loc.name in example:
                    values[loc] = text_of(example[loc.name])
                elif example is None and loc.name in p.schema.get("required", []):
                    values[loc] = lowest(loc)
        else:
            values[p.locations[0]] = text_of(example) if example is not None else \
                lowest(p.locations[0])
    body = None
    if op.body_required:
        example = op.body_example
        if example is None:
            example = find(values_for(op.body_schema), lambda v: True, settings=_QUIET)
        body = json.dumps(example).encode()
    return Request(op, values, body)


def lowest(loc):
    """The smallest valid text of a location (its example, when it has one)."""
    if loc.example is not None:
        return text_of(loc.example)
    if loc.schema.get("type") == "integer":
        return str(loc.schema.get("minimum", 0))
    return find(location_text(loc), lambda v: True, settings=_QUIET)


def edge_requests(op):
    """For every location, the minimal request with the location at each edge: an
    integer's bounds and one past them, and NUMERIC_EDGES for any location. Where an
    edge is valid on its own but the request needs more (a bound that requires a
    companion parameter), the other locations are added at their smallest values."""
    base = minimal_request(op)
    for loc in op.locations:
        edges = list(NUMERIC_EDGES)
        if loc.schema.get("type") == "integer":
            lo, hi = loc.schema.get("minimum"), loc.schema.get("maximum")
            edges = [str(v) for v in (lo, hi, lo - 1 if lo is not None else None,
                                      hi + 1 if hi is not None else None)
                     if v is not None] + edges
        if loc.where == "header":
            edges = [e for e in edges if is_field_value(e)]
        for text in dict.fromkeys(edges):
            values = dict(base.values)
            values[loc] = text
            req = Request(op, values, base.body)
            if judge(req) is not None and loc.check.is_valid(loc.read(text)):
                # all the others at their smallest, then each left out again if it can be
                filled = {**{o: lowest(o) for o in op.locations if o not in values}, **values}
                if judge(Request(op, filled, base.body)) is None:
                    for other in [o for o in filled if o not in values]:
                        fewer = {k: v for k, v in filled.items() if k is not other}
                        if judge(Request(op, fewer, base.body)) is None:
                            filled = fewer
                    req = Request(op, filled, base.body)
            yield req


def seed_of(name):
    return zlib.crc32(name.encode())


# ---- answers --------------------------------------------------------------------------------

def media_matches(media, described):
    if described == "*/*":
        return True
    if described.endswith("/*"):
        return media.split("/")[0] == described.split("/")[0]
    return media == described


def check_described(op, ans, resp):
    """Problems of an answer against the response that describes its status."""
    problems = []
    for name, (required, check) in resp.headers.items():
        value = ans.header(name)
        if value is None:
            if required:
                problems.append(f"no {name} header, which the {resp.code} answer requires")
        elif not check.is_valid(value):
            problems.append(f"header {name}: {value!r} does not match "
                            f"{check.schema}")
    if op.method == "HEAD" or not ans.body:
        return problems
    ctype = ans.header("content-type")
    media = (ctype or "").split(";")[0].strip().lower()
    matches = [m for m in resp.content if media_matches(media, m)]
    if not resp.content:
        problems.append(f"a body ({len(ans.body)} bytes) where the {resp.code} answer has none")
        return problems
    if not matches:
        problems.append(f"content type {ctype!r}, described: {sorted(resp.content)}")
        return problems
    if not ans.complete:
        return problems  # streamed or cut short: its type is all there is to check
    check = resp.content[matches[0]]
    if media == "application/json" or media.endswith("+json"):
        try:
            value = json.loads(ans.body)
        except ValueError:
            problems.append(f"not JSON: {ans.body[:200]!r}")
            return problems
    else:
        value = ans.body.decode("utf-8", errors="replace")
    error = jsonschema.exceptions.best_match(check.iter_errors(value))
    if error is not None:
        problems.append(f"body {ans.body[:200]!r}: {error.message}")
    return problems


def is_error_body(ans, error_check):
    try:
        return error_check.is_valid(json.loads(ans.body))
    except ValueError:
        return False


def check_valid_answer(op, req, ans, error_check):
    """Problems of the answer to a request the description calls valid."""
    if ans.outcome == "pending":
        return []  # not refused at once: it waits, as it may (a delay)
    if ans.outcome == "no-response":
        return [] if req.no_response_allowed() else ["no answer: the connection ended"]
    resp = op.response(ans.status)
    if resp is None:
        return [f"status {ans.status} is not described (described: {sorted(op.responses)})"]
    if op.method == "HEAD":
        # no body to tell: a refusal where GET answers this status with an Error only
        twin = op.twin.response(ans.status) if op.twin is not None else None
        refused = resp.refusal or (ans.status in REFUSAL_STATUSES and ans.status != 426 and
                                   twin is not None and twin.error_only)
    else:
        refused = ans.status in REFUSAL_STATUSES and ans.body and is_error_body(ans, error_check)
    if refused:
        return [f"refused with {ans.status} {ans.body[:200]!r}"]
    return check_described(op, ans, resp)


def check_invalid_answer(op, req, ans, error_check):
    """Problems of the answer to a request the description calls invalid."""
    if ans.outcome != "answer":
        return [f"{ans.outcome} instead of a refusal"]
    if not 400 <= ans.status < 500:
        return [f"{ans.status} instead of a 4xx"]
    problems = []
    ctype = (ans.header("content-type") or "").split(";")[0].strip().lower()
    if ctype != "application/json":
        problems.append(f"content type {ctype!r} instead of application/json")
    if op.method != "HEAD" and not is_error_body(ans, error_check):
        problems.append(f"not an Error body: {ans.body[:200]!r}")
    resp = op.response(ans.status)
    if resp is not None:
        problems += check_described(op, ans, resp)
    return problems
