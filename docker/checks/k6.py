"""k6 on Kubernetes as in Compose: the TestRun runs the pinned k6 with compose.yaml's
remote-write settings, a testid from TESTID and no --tag."""
import re

from . import check
from .files import HERE, ROOT, TESTRUN, compose, load_yaml, rel


def k6_pinned():
    """The k6 version the tests run, as loadtests/loadlib/tools/k6.py pins it."""
    text = (ROOT / "loadtests" / "loadlib" / "tools" / "k6.py").read_text()
    return re.search(r'^PINNED = "([^"]+)"', text, re.M).group(1)


@check("k6: the TestRun runs the pinned k6 as compose.yaml does (trend stats, push "
       "interval, image, TESTID, no --tag)")
def check_k6_trend_stats():
    """The TestRun runs k6 as compose.yaml does: the same trend stats and push
    interval (so the dashboards' k6_*_pNN names exist in both setups), the same
    image at the pinned version (loadtests/loadlib/tools/k6.py PINNED, the
    release the tests run), testid from TESTID and no --tag on the command line
    (a --tag replaces the script's tags: runtime, mode, round)."""
    k6 = compose(HERE / "compose.yaml")["services"]["k6"]
    cenv = k6["environment"]
    spec = load_yaml(TESTRUN)["spec"]
    runner = spec.get("runner") or {}
    env = {e["name"]: e.get("value") for e in runner.get("env", [])}
    problems = []
    for var in ("K6_PROMETHEUS_RW_TREND_STATS", "K6_PROMETHEUS_RW_PUSH_INTERVAL"):
        if env.get(var) != cenv.get(var):
            problems.append(f"{rel(TESTRUN)} {var} is {env.get(var)!r}, compose.yaml's k6 has "
                            f"{cenv.get(var)!r}")
    want = f"grafana/k6:{k6_pinned()}"
    if k6.get("image") != want:
        problems.append(f"compose.yaml's k6 image is {k6.get('image')!r}, the pinned k6 is {want}")
    for part in ("initializer", "runner", "starter"):
        image = (spec.get(part) or {}).get("image")
        if image is not None and image != want:
            problems.append(f"{rel(TESTRUN)} {part} image is {image!r}, the pinned k6 is {want}")
    if not env.get("TESTID"):
        problems.append(f"{rel(TESTRUN)}: the runners need TESTID (the testid tag of every sample)")
    if re.search(r"(^|\s)--tag(\s|=)", spec.get("arguments", "")):
        problems.append(f"{rel(TESTRUN)}: no --tag in arguments, it replaces the script's tags")
    return problems
