"""bench --compare's two builds of notesd: which revisions (`REV` is REV against this
working tree, `BASE..NEW` two revisions of the repository), each built, the binary
copied aside and the build removed again.

A revision is built from `git archive REV | tar -x` in a temporary directory with
that revision's own server/build.sh (BUILD_DIR beside it, BUILD_TESTING off: only
notesd is needed), so nothing of this checkout leaks into it and no worktree is
registered in the repository; `BASE..NEW` of one commit is built once, each side
running a copy. The working tree is built where it is, in build/, by
`cmake --build build --target notesd` (server/build.sh configures build/ first when
it has never been configured), so side A is the code as it is now, uncommitted
changes included; with --notesd, that binary instead, as it is.
"""
import os
import shutil
import subprocess

from loadlib.commands.bench.subjects import log, notesd_features, sh, sha256
from loadlib.paths import REPO


class BuildError(RuntimeError):
    """A revision that does not resolve, or a build that fails; the message says which."""


class Build:
    """One side of the comparison. side: "A" (the new one, measured against B) or "B";
    rev: the revision as given (None for the working tree); sha: the commit; describe:
    how the report names it; source: where the binary was built (gone once copied);
    notesd: the private copy runs use; sha256, threads, pipeline, notesd_vars: what that
    binary is and offers."""

    def __init__(self, side, rev, sha, describe, source):
        self.side, self.rev, self.sha, self.describe, self.source = side, rev, sha, describe, source
        self.notesd = self.sha256 = None
        self.threads = self.pipeline = False
        self.notesd_vars = set()

    def adopt(self, tmp):
        """Copies the built binary into tmp (a rebuild during the run changes nothing) and
        reads what its --help offers."""
        self.notesd = os.path.join(tmp, f"notesd-{self.side}")
        shutil.copy2(self.source, self.notesd)
        self.sha256 = sha256(self.notesd)
        features = notesd_features(self.notesd)
        self.threads, self.pipeline = features["threads"], features["pipeline"]
        self.notesd_vars = features["vars"]
        return self

    def twin(self, side, rev, tmp):
        """The other side of a comparison of one commit with itself: the same build, in a
        copy of its own (a build of one commit from its archive is the same binary twice)."""
        other = Build(side, rev, self.sha, describe(self.sha, rev), self.notesd).adopt(tmp)
        other.source = self.source + f", the same build as side {self.side}"
        return other

    def meta(self):
        return {"side": self.side, "rev": self.rev, "sha": self.sha, "describe": self.describe,
                "source": self.source, "sha256": self.sha256, "pipeline": self.pipeline}


def parse_compare(text):
    """'REV' -> (REV, None): REV against the working tree; 'BASE..NEW' -> (BASE, NEW).
    ValueError for an empty side or a three-dot range."""
    text = text.strip()
    if "..." in text:
        raise ValueError(f"{text!r}: use BASE..NEW (two dots) or one revision")
    if ".." in text:
        base, new = text.split("..", 1)
        if not base or not new:
            raise ValueError(f"{text!r}: BASE..NEW needs both revisions")
        return base, new
    if not text:
        raise ValueError("--compare needs a revision")
    return text, None


def resolve(rev):
    """The full commit id of a revision of this repository; BuildError when it names none."""
    res = subprocess.run(["git", "-C", REPO, "rev-parse", "--verify", "--quiet",
                          f"{rev}^{{commit}}"], capture_output=True, text=True)
    if res.returncode != 0 or not res.stdout.strip():
        raise BuildError(f"{rev!r} is not a commit of this repository")
    return res.stdout.strip()


def describe(sha, rev):
    """'main = 0c99168a1b (subject line)' for the report."""
    subject = sh(["git", "-C", REPO, "log", "-1", "--format=%s", sha])[:72]
    shown = sha[:10] if not rev or sha.startswith(rev) else f"{rev} = {sha[:10]}"
    return f"{shown} ({subject})"


def run_logged(cmd, log_path, env=None, cwd=None, stdin=None):
    """Runs a build step with its output appended to log_path; BuildError when it fails."""
    with open(log_path, "a") as out:
        out.write("$ " + " ".join(cmd) + "\n")
        out.flush()
        res = subprocess.run(cmd, env=env, cwd=cwd, stdin=stdin, stdout=out,
                             stderr=subprocess.STDOUT)
    if res.returncode != 0:
        raise BuildError(f"{' '.join(cmd)} failed (exit {res.returncode}); see {log_path}")


def build_revision(side, rev, tmp, log_path):
    """Builds a revision in a temporary tree under tmp (removed once its binary is copied)."""
    sha = resolve(rev)
    tree = os.path.join(tmp, f"tree-{side}-{sha[:12]}")
    src, build_dir = os.path.join(tree, "src"), os.path.join(tree, "build")
    os.makedirs(src)
    log(f"{side}: building {rev} ({sha[:10]}) in a temporary tree")
    try:
        archive = subprocess.Popen(["git", "-C", REPO, "archive", "--format=tar", sha],
                                   stdout=subprocess.PIPE)
        try:
            run_logged(["tar", "-x", "-C", src], log_path, stdin=archive.stdout)
        finally:
            archive.stdout.close()
            if archive.wait() != 0:
                raise BuildError(f"git archive {sha} failed")
        # paths relative to the tree: a ccache the caller set up knows the sources again
        env = dict(os.environ, BUILD_DIR=build_dir, CMAKE_ARGS="-DBUILD_TESTING=OFF",
                   CCACHE_BASEDIR=tree)
        run_logged([os.path.join(src, "server", "build.sh")], log_path, env=env)
        binary = os.path.join(build_dir, "notesd")
        if not os.path.exists(binary):
            raise BuildError(f"{rev}: server/build.sh left no {binary}")
        build = Build(side, rev, sha, describe(sha, rev), binary).adopt(tmp)
    finally:
        shutil.rmtree(tree, ignore_errors=True)
    build.source = f"git archive {sha[:10]}, server/build.sh (removed)"
    return build


def working_tree(side, notesd, default_notesd, tmp, log_path):
    """Side A from this checkout: --notesd's binary as it is, or (the default) build/
    brought up to date with the working tree."""
    sha = resolve("HEAD")
    dirty = bool(sh(["git", "-C", REPO, "status", "--porcelain", "--untracked-files=no"]))
    name = f"this working tree (HEAD {sha[:10]}{' + uncommitted changes' if dirty else ''})"
    src = os.path.abspath(notesd)
    if src == os.path.abspath(default_notesd):
        build_dir = os.path.dirname(src)
        log(f"{side}: building the working tree ({build_dir})")
        if os.path.exists(os.path.join(build_dir, "CMakeCache.txt")):
            run_logged(["cmake", "--build", build_dir, "--target", "notesd",
                        f"-j{os.cpu_count() or 1}"], log_path)
        else:
            env = dict(os.environ, BUILD_DIR=build_dir, CMAKE_ARGS="-DBUILD_TESTING=OFF")
            run_logged([os.path.join(REPO, "server", "build.sh")], log_path, env=env)
    elif not os.path.exists(src):
        raise BuildError(f"--notesd {src}: no such file")
    else:
        name = f"{src} (as given; HEAD is {sha[:10]})"
    return Build(side, None, sha, name, src).adopt(tmp)


def prepare(bench, spec):
    """The two sides of `--compare spec`, built; BuildError when either cannot be."""
    base, new = parse_compare(spec)
    log_path = os.path.join(bench.logdir, "compare-build.log")
    a = bench.args
    if new is None:
        side_a = working_tree("A", a.notesd, a.default_notesd, bench.tmp, log_path)
    else:
        side_a = build_revision("A", new, bench.tmp, log_path)
        if resolve(base) == side_a.sha:      # BASE..NEW of one commit, as the smoke test runs it
            return side_a, side_a.twin("B", base, bench.tmp)
    side_b = build_revision("B", base, bench.tmp, log_path)
    return side_a, side_b
