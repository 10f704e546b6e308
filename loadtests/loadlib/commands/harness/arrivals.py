"""run.sh --journal: each notesd test's request journal kept beside its summary, and
the report's arrivals-per-second chart.

With --journal the harness starts notesd with JOURNAL=RECORDS (160 bytes a record, so
about 32 MB per loop as the ring fills: memory figures of such a run include it, and
are compared with runs without it at one's peril). While a test runs, a Tap pages
through GET /journal every READ_EVERY_S seconds (the ring never laps a reader that
keeps up: 200,000 records is 20 s at 10,000 req/s) and appends every record to the
test's journal.ndjson.gz; test.json gets {"records", "lost", "arrivals_per_s"}, the
arrivals counted per second of the test by the records' started_us. The Express peers
have no journal: their tests have none.
"""
import gzip
import json
import os
import threading

from loadlib import charts, journal

RECORDS = 200_000
READ_EVERY_S = 0.5


class Tap(threading.Thread):
    """Reads the journal of the notesd on `metrics_port` into mdir/journal.ndjson.gz from
    the moment it is made until finish()."""

    def __init__(self, mdir, metrics_port):
        super().__init__(daemon=True)
        self.metrics_port = metrics_port
        self.path = os.path.join(mdir, "journal.ndjson.gz")
        self.since = journal.newest(metrics_port)          # what came before the test
        self.records, self.lost, self.errors = 0, 0, []
        self.started = []                                  # every record's started_us
        self.stop = threading.Event()

    def run(self):
        with gzip.open(self.path, "wt") as out:
            while True:
                last = self.stop.wait(READ_EVERY_S)
                self.drain(out)
                if last:
                    return

    def drain(self, out):
        try:
            records, lost, self.since = journal.read(self.metrics_port, self.since)
        except OSError as e:
            self.errors.append(str(e))
            return
        self.lost += lost
        for r in records:
            out.write(json.dumps(r, separators=(",", ":")) + "\n")
            if r["kind"] == "http":
                self.started.append(r["started_us"])
        self.records += len(records)

    def finish(self, start_unix):
        """Stops after one last read; the figures for test.json."""
        self.stop.set()
        self.join(30)
        t0 = int(start_unix * 1e6)
        per_s = {}
        for t in self.started:
            per_s[(t - t0) // 1_000_000] = per_s.get((t - t0) // 1_000_000, 0) + 1
        last = max(per_s) if per_s else -1
        return {"records": self.records, "lost": self.lost, "errors": self.errors,
                "file": os.path.basename(self.path),
                "arrivals_per_s": [per_s.get(s, 0) for s in range(0, last + 1)]}


def write_chart(out_dir, tests, mode_labels):
    """arrivals.svg: notesd's arrivals per second in each test of the first round that has
    a journal, one line per mode; False (and no file) when no test has one."""
    rows = [t for t in tests if t.get("journal", {}).get("arrivals_per_s")]
    if not rows:
        return False
    first = min(t["round"] for t in rows)
    series = [(t["mode"], mode_labels.get(t["mode"], t["mode"]),
               [(s, n, None) for s, n in enumerate(t["journal"]["arrivals_per_s"])], False)
              for t in rows if t["round"] == first]
    svg = charts.line_chart("Arrivals per second (notesd's request journal)",
                            f"round {first}: requests by the second their handler started",
                            series, "second of the test", "requests arrived")
    with open(os.path.join(out_dir, "arrivals.svg"), "w") as f:
        f.write(svg)
    return True
