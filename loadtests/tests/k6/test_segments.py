"""Distributed k6 the way the k6-operator runs it: a TestRun with `parallelism: N`
starts N runner pods, runner i with

    --execution-segment=(i-1)/N:i/N --execution-segment-sequence=0,1/N,...,(N-1)/N,1

(the operator's pkg/segmentation), each with `--paused`, and its starter then
un-pauses them all at once through each runner's REST API (PATCH /v1/status).
Here the runners are N k6 processes on this machine doing exactly that against one
notesd, for N = 2 and 3, and the test checks that

  - their http_reqs add up to the server's http_requests_total delta over the run,
  - and to the same script run unsplit (k6 stripes the iterations of a segment
    sequence so that the union of the segments is the whole run): hello.js
    (shared-iterations) exactly, notes-open.js (constant-arrival-rate) within one
    iteration per process (each decides by its own clock whether an arrival due right
    at the end of the duration still starts: 241 against 240 was seen on a busy machine),
  - each runner's own summary covers its segment only (hello.js: ITERATIONS / N).

Latency percentiles cannot be added up the same way: a p99 of the union is not a
function of the runners' p99s (docker/kubernetes/README.md, "Distributed load").

    cd loadtests && NOTESD_BIN=../build/notesd NOTESD_PGSTATE=../build-test/pgstate.json \\
      K6=/path/to/k6 /usr/bin/python3 -B -m tests.k6.test_segments

CTest `loadtests_k6_segments`; exits 77 (skipped) without k6, saying why.
"""
import json
import os
import shutil
import subprocess
import tempfile
import time
import unittest
import urllib.request

from loadlib.server import free_port
from tests.k6 import k6live

K6 = k6live.require_k6("k6 split over 2 and 3 runners as the k6-operator does it")
k6live.require_notesd_and_postgres()

HELLO = {"WARMUP": "120", "WARMUP_WINDOW": "1s", "ITERATIONS": "3000", "VUS": "12"}
# GET /json (no database): the run tests how k6 splits a rate, so nothing may drop
# an iteration; 30 VUs ready at 120/s leave answers 250 ms of room
OPEN = {"MODE": "json", "RATE": "120", "DURATION": "2s", "PRE_VUS": "30", "MAX_VUS": "120"}
START_TIMEOUT_S = 30


def operator_segments(index, total):
    """The k6-operator's arguments for runner `index` (1-based) of `total`."""
    part = lambda i: "0" if i == 0 else "1" if i == total else f"{i}/{total}"
    sequence = ",".join(["0"] + [f"{i}/{total}" for i in range(1, total)] + ["1"])
    return [f"--execution-segment={part(index - 1)}:{part(index)}",
            f"--execution-segment-sequence={sequence}"]


def rest(port, method="GET", body=None):
    req = urllib.request.Request(f"http://127.0.0.1:{port}/v1/status", method=method,
                                 data=None if body is None else json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=5) as r:
        return json.load(r)["data"]["attributes"]


class Segments(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="k6-segments-")
        cls.server = k6live.Server("k6_segments")
        cls.server.warm()

    @classmethod
    def tearDownClass(cls):
        cls.server.stop()
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def unsplit(self, script, variables):
        run = k6live.run_script(K6, self.server, script, variables, self.tmp,
                                name=f"{script}-unsplit")
        self.assertEqual(run.rc, 0, run.output())
        rc, data, text = run.reconcile()
        self.assertEqual(rc, 0, text)
        return int(run.metric("http_reqs", "count"))

    def distributed(self, script, variables, total):
        """N paused runners with the operator's segments, un-paused together; returns
        ([each runner's summary], the server's request delta over the whole run)."""
        procs, ports, summaries, logs = [], [], [], []
        before = self.server.requests_total()
        try:
            for i in range(1, total + 1):
                port = free_port()
                summary = os.path.join(self.tmp, f"{script}-{total}-{i}.json")
                log = open(os.path.join(self.tmp, f"{script}-{total}-{i}.log"), "w+")
                argv = [K6, "run", "--quiet", "--paused", "--address", f"127.0.0.1:{port}",
                        *operator_segments(i, total), "-e", f"BASE_URL={self.server.base_url}",
                        "-e", f"SUMMARY={summary}", "-e", f"TESTID=segments-{total}"]
                for k, v in variables.items():
                    argv += ["-e", f"{k}={v}"]
                argv.append(os.path.join(k6live.K6DIR, script))
                procs.append(subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT,
                                              stdin=subprocess.DEVNULL, env=k6live.k6_env()))
                ports.append(port)
                summaries.append(summary)
                logs.append(log)
            # the starter's part: wait until every runner is up and paused, then resume all
            deadline = time.monotonic() + START_TIMEOUT_S
            for p, port in zip(procs, ports):
                while True:
                    try:
                        if rest(port)["paused"]:
                            break
                    except OSError:
                        pass
                    if p.poll() is not None or time.monotonic() > deadline:
                        raise AssertionError(f"a runner did not come up paused on {port}")
                    time.sleep(0.05)
            for port in ports:
                self.assertFalse(rest(port, "PATCH", {"data": {
                    "type": "status", "id": "default", "attributes": {"paused": False}}})["paused"])
            for p in procs:
                p.wait(k6live.RUN_TIMEOUT_S)
            outputs = []
            for log in logs:
                log.seek(0)
                outputs.append(log.read())
            for p, out in zip(procs, outputs):
                self.assertEqual(p.returncode, 0, out[-3000:])
        finally:
            for p in procs:
                if p.poll() is None:
                    p.kill()
                    p.wait()
            for log in logs:
                log.close()
        after = self.server.requests_total()
        result = []
        for path in summaries:
            with open(path) as f:
                result.append(json.load(f))
        return result, after - before

    def check(self, script, variables, per_runner=None, edge=0):
        """edge: iterations each k6 process may add or miss at the end of its duration (an
        arrival scheduled right at the end starts or not by that process's own clock), so
        the union of N runners may differ from the unsplit run by at most N + 1 of them."""
        whole = self.unsplit(script, variables)
        for total in (2, 3):
            with self.subTest(script=script, parallelism=total):
                runs, server = self.distributed(script, variables, total)
                counts = [int(r["metrics"]["http_reqs"]["values"]["count"]) for r in runs]
                print(f"  {script}: unsplit {whole}; parallelism {total}: runners "
                      f"{' + '.join(map(str, counts))} = {sum(counts)}, server {server}",
                      flush=True)
                self.assertEqual(sum(counts), server, "the runners' counts against the server's")
                self.assertLessEqual(abs(sum(counts) - whole), edge * (total + 1),
                                     "the runners' counts against the unsplit run")
                self.assertTrue(all(counts), counts)
                for r in runs:
                    self.assertEqual(r["notesd_test"]["tags"]["testid"], f"segments-{total}")
                if per_runner:
                    per_runner(runs, total)

    def test_hello_shared_iterations(self):
        def per_runner(runs, total):
            # each runner measured its own segment of ITERATIONS, no more
            measured = [int(r["metrics"]["http_reqs{scenario:measure}"]["values"]["count"])
                        for r in runs]
            self.assertEqual(measured, [int(HELLO["ITERATIONS"]) // total] * total)
        self.check("hello.js", HELLO, per_runner)

    def test_open_model_arrival_rate(self):
        def per_runner(runs, total):
            for r in runs:
                dropped = (r["metrics"].get("dropped_iterations") or {}).get("values", {})
                self.assertEqual(dropped.get("count", 0), 0)
        self.check("notes-open.js", OPEN, per_runner, edge=1)


if __name__ == "__main__":
    unittest.main(verbosity=2)
