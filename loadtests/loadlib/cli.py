"""Values on the commands' command lines that more than one command reads: how
long something lasts. Each raises argparse.ArgumentTypeError, so it serves as an
argparse `type=` as well as after parsing."""
import argparse
import re


def seconds(text, what="duration"):
    """'180s', '3m', '1m30s', '2', '500ms' -> seconds (float)."""
    s = str(text).strip()
    if re.fullmatch(r"\d+(\.\d+)?", s):
        return float(s)
    total, pos = 0.0, 0
    for m in re.finditer(r"(\d+(?:\.\d+)?)(ms|h|m|s)", s):
        if m.start() != pos:
            break
        n = float(m.group(1))
        total += {"h": 3600, "m": 60, "s": 1, "ms": 0.001}[m.group(2)] * n
        pos = m.end()
    if not s or pos != len(s):
        raise argparse.ArgumentTypeError(f"bad {what} {text!r} (use e.g. 180s, 3m, 1m30s)")
    return total


def whole_seconds(text):
    """A duration of at least 1 s in whole seconds, as bench takes them: '20s', '1m',
    '20' (and anything else seconds() reads that comes to whole seconds)."""
    try:
        n = seconds(text)
    except argparse.ArgumentTypeError:
        n = None
    if n is None or n != int(n):
        raise argparse.ArgumentTypeError(f"'{text}': whole seconds like 20s or 1m")
    if n < 1:
        raise argparse.ArgumentTypeError("must be at least 1s")
    return int(n)
