"""What the package tests share: the repository, skipping, commands, the rows
of --help, a man page as text, and the figures docs/install.md states.

Owns reading docs/install.md's figures (the exposure `systemd-analyze security`
gives the unit and the lintian tags accepted), so that a test fails when the
page and the measurement disagree. It does not build or install anything."""
import os
import re
import subprocess
import sys

SKIP = 77  # CTest's SKIP_RETURN_CODE
HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
INSTALL_MD = os.path.join(REPO, "docs", "install.md")


def skip(reason):
    print(f"SKIP {reason}", flush=True)
    sys.exit(SKIP)


def run(cmd, check=True, env=None, timeout=600, **kw):
    """Runs `cmd`; returns its CompletedProcess with stdout and stderr as text."""
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                       env={**os.environ, **(env or {})}, **kw)
    if check and r.returncode != 0:
        raise AssertionError(f"{' '.join(cmd)} exited {r.returncode}:\n{r.stdout[-3000:]}{r.stderr[-3000:]}")
    return r


def project_version():
    with open(os.path.join(REPO, "CMakeLists.txt")) as f:
        return re.search(r"project\(notesd VERSION ([0-9.]+)", f.read()).group(1)


# "  --pool-max VALUE                 POOL_MAX                 most database ... [20]"
HELP_ROW = re.compile(r"^  --([a-z0-9-]+)( VALUE)?\s+([A-Z0-9_]*)\s+(.*?)(?: \[([^\]]*)\])?$")


def help_rows(text):
    """[(flag, takes_value, env, help, default or None)] of `notesd --help`."""
    rows = []
    for line in text.splitlines():
        m = HELP_ROW.match(line)
        if m:
            rows.append((m.group(1), bool(m.group(2)), m.group(3), m.group(4), m.group(5)))
    return rows


def man_as_text(page, man=("man",), env=None):
    """A man page (a file path for `man -l`, or a name) as plain text: the
    terminal's bold and underline (backspace overstrikes) taken out."""
    args = [*man, "-l", page] if "/" in page else [*man, page]
    r = run(args, env={"MANWIDTH": "100", "MANPAGER": "cat", "PAGER": "cat", **(env or {})})
    return re.sub(r".\x08", "", r.stdout)


def man_warnings(path):
    """What groff says of a man page when lintian's check renders it."""
    r = run(["man", "--warnings", "-E", "UTF-8", "-l", "-Tutf8", "-Z", path], check=False,
            env={"LC_ALL": "C.UTF-8", "MANROFFSEQ": "", "MANWIDTH": "80"})
    return r.returncode, r.stderr.strip()


def check_man_lists_help(man_text, rows):
    """Failures (strings) where the man page's OPTIONS do not show a row of --help:
    each flag with VALUE when it takes one, its variable, and its default."""
    failures = []
    # An entry's tag starts a line at the section's indent (7 columns); a short
    # one (--help) has its text beside it.
    entries = re.findall(r"^ {7}(--[a-z0-9-]+(?: VALUE)?(?:, [A-Z0-9_]+)?)(?: +|$)", man_text, re.M)
    # Words the page breaks across lines are joined, and spacing made single.
    flat = re.sub(r"(\w)[\u2010-]\n\s*(\w)", r"\1\2", man_text)
    flat = re.sub(r"\s+", " ", flat)
    for flag, takes_value, env, _help, default in rows:
        head = f"--{flag}" + (" VALUE" if takes_value else "") + (f", {env}" if env else "")
        if head not in entries:
            failures.append(f"no entry '{head}' in the man page")
            continue
        if default is None:
            continue
        start = flat.index(head + " ")
        following = entries.index(head) + 1
        end = flat.index(entries[following] + " ", start) if following < len(entries) else None
        body = flat[start:end]
        wanted = "Required" if default == "required" else f"Default: {default}"
        if not re.search(re.escape(wanted) + r"[.;:]", body):
            failures.append(f"--{flag}: the man page does not say '{wanted}': {body[:200]}")
    if len(entries) != len(rows):
        failures.append(f"the man page has {len(entries)} option entries, --help {len(rows)}")
    return failures


def doc_text():
    with open(INSTALL_MD, encoding="utf-8") as f:
        return f.read()


def stated_exposure():
    """The exposure figure and the {setting: exposure} rows docs/install.md states."""
    text = doc_text()
    m = re.search(r"Overall exposure level for notesd\.service: ([0-9.]+)", text)
    section = text.split("## Its exposure", 1)[1].split("\n## ", 1)[0]
    rows = {name.replace("\\|", "|"): figure
            for name, figure in re.findall(r"^\| `([^`]+)` \| ([0-9.]+) \|", section, re.M)}
    return (m.group(1) if m else None), rows


def measured_exposure(unit_path):
    """`systemd-analyze security --offline=yes` of a unit file: its figure, the
    {setting: exposure} of every check it fails, and the whole output."""
    r = run(["systemd-analyze", "security", "--offline=yes", "--no-pager", unit_path])
    figure = re.search(r"Overall exposure level for notesd\.service: ([0-9.]+)", r.stdout).group(1)
    failed = {}
    for line in r.stdout.splitlines():
        m = re.match(r"^\u2717 (\S+)\s.*?\s([0-9.]+)\s*$", line)
        if m:
            failed[m.group(1)] = m.group(2)
    return figure, failed, r.stdout


def accepted_lintian_tags():
    """{tag: level} of the lintian tags docs/install.md accepts, with reasons."""
    section = doc_text().split("### Lintian", 1)[1].split("\n## ", 1)[0]
    return {tag: level for tag, level in re.findall(r"^\| `([a-z0-9.+-]+)` \| ([EWIPX]) \|", section, re.M)}


class Checks:
    """Named checks that print ok or FAIL as they go; exit status from the count."""

    def __init__(self):
        self.failed = 0
        self.passed = 0

    def check(self, name, ok, detail=""):
        if ok:
            self.passed += 1
            print(f"ok   {name}", flush=True)
        else:
            self.failed += 1
            print(f"FAIL {name}: {detail}", flush=True)
        return ok

    def finish(self):
        print(f"{self.passed} passed, {self.failed} failed", flush=True)
        sys.exit(1 if self.failed else 0)
