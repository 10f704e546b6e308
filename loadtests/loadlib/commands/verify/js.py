"""What a notes API must send, byte for byte: JSON.stringify's output for the
values node-postgres hands the reference app (keys id,title,body,tag,created_at, no
spaces, id a string, created_at Date.toISOString() of the value truncated to ms),
built here for verify's checks."""
import datetime


def js_string(s):
    """JSON.stringify of a string: \\" \\\\ \\b \\f \\n \\r \\t, other C0 controls
    and lone surrogates as \\u00xx (lower-case hex); everything else as is."""
    out = ['"']
    short = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r",
             "\t": "\\t"}
    for ch in s:
        o = ord(ch)
        if ch in short:
            out.append(short[ch])
        elif o < 0x20 or 0xD800 <= o <= 0xDFFF:
            out.append("\\u%04x" % o)
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def js_value(v):
    if isinstance(v, bool):
        return "true" if v else "false"
    if v is None:
        return "null"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, str):
        return js_string(v)
    if isinstance(v, list):
        return "[" + ",".join(js_value(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{" + ",".join(js_string(k) + ":" + js_value(x) for k, x in v.items()) + "}"
    raise TypeError(f"cannot render {type(v).__name__}")


def js_bytes(v):
    return js_value(v).encode("utf-8")


def iso_ms(epoch_us):
    """Date.prototype.toISOString() of epoch microseconds truncated to ms."""
    ms = epoch_us // 1000
    dt = datetime.datetime(1970, 1, 1) + datetime.timedelta(milliseconds=ms)
    return "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ" % (
        dt.year, dt.month, dt.day, dt.hour, dt.minute, dt.second, ms % 1000)


def note_from_row(row):
    return {"id": row[0], "title": row[1], "body": row[2], "tag": row[3],
            "created_at": iso_ms(row[4])}


def parse_iso(s):
    """Epoch seconds of a Date.toISOString() string."""
    dt = datetime.datetime.strptime(s, "%Y-%m-%dT%H:%M:%S.%fZ")
    return dt.replace(tzinfo=datetime.timezone.utc).timestamp()
