#!/usr/bin/python3
"""docker/kubernetes/ rendered and checked, without a cluster.

    /usr/bin/python3 docker/tests/test_kubernetes.py

Renders every overlay with `kubectl kustomize DIR` and no flags, with kustomize's
default load restrictor, as `kubectl apply -k` and GitOps tools (Argo CD, Flux)
build them, and checks the objects:

  - nothing under docker/kubernetes/ is a copy of a file of sql/ or loadtests/:
    the overlays take the SQL and the k6 scripts from the kustomizations
    beside them (sql/kustomization.yaml, loadtests/kustomization.yaml), as bases;

  - each overlay has the kinds it promises, every object a name, the namespace
    notesd, and every image a pinned tag (no :latest);
  - notesd's Deployment: container ports and PORT/METRICS_PORT are notesd's
    defaults (docs/configuration.md); liveness and startup probes GET /healthz
    and readiness GET /readyz on the port named metrics, paths the metrics port
    serves (docs/metrics.md); non-root as the image's UID, read-only root file
    system with /tmp on an emptyDir, requests and limits, a preStop, and a
    grace period covering preStop + SHUTDOWN_TIMEOUT_MS; DB_URL from a Secret
    the overlay provides (or the CloudNativePG operator does);
  - the Service, PodDisruptionBudget, HorizontalPodAutoscaler and PodMonitors
    select the pods and ports that exist; Prometheus scrapes every second,
    selects the monitors and accepts remote write;
  - PostgreSQL: the StatefulSet's init scripts (in the order the image runs
    them) and the CloudNativePG SQL are byte-identical to sql/, health checks
    over TCP, pg_stat_statements on;
  - the k6 TestRun (k6.io/v1alpha1): parallelism, the script mounted where
    localFile points, the ConfigMap byte-identical to loadtests/k6/ (every
    script and lib/) and loadtests/mixes.json, every key mounted, remote write
    to the monitoring Prometheus every second, a testid tag from TESTID
    (never --tag, which would replace the script's tags).

Exit status: 0 passed, 1 failed, 77 (CTest's skip) without a kubectl whose
kustomize is v4 or newer (Debian 12's kubernetes-client 1.20 embeds v2).
"""
import json
import os
import re
import shutil
import subprocess
import sys

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
K8S = os.path.join(REPO, "docker", "kubernetes")
NAMESPACE = "notesd"
SKIP = 77

EXPECTED_KINDS = {
    "base": {"Namespace", "Deployment", "Service", "PodDisruptionBudget", "HorizontalPodAutoscaler"},
    "overlays/statefulset": {"Namespace", "Deployment", "Service", "PodDisruptionBudget",
                             "HorizontalPodAutoscaler", "StatefulSet", "Secret", "ConfigMap",
                             "Prometheus", "PodMonitor", "ServiceAccount", "Role", "RoleBinding"},
    "overlays/cloudnativepg": {"Namespace", "Deployment", "Service", "PodDisruptionBudget",
                               "HorizontalPodAutoscaler", "Cluster", "Job", "ConfigMap", "Prometheus",
                               "PodMonitor", "ServiceAccount", "Role", "RoleBinding"},
    "overlays/k6": {"TestRun", "ConfigMap"},
}
API_VERSIONS = {"TestRun": "k6.io/v1alpha1", "Cluster": "postgresql.cnpg.io/v1",
                "PodMonitor": "monitoring.coreos.com/v1", "Prometheus": "monitoring.coreos.com/v1",
                "HorizontalPodAutoscaler": "autoscaling/v2", "PodDisruptionBudget": "policy/v1",
                "Deployment": "apps/v1", "StatefulSet": "apps/v1", "Job": "batch/v1"}


# ---------------------------------------------------------------- helpers

class Checks:
    def __init__(self):
        self.passed = 0
        self.failed = 0

    def run(self, name, problems):
        if problems:
            self.failed += 1
            for p in problems:
                print(f"FAIL {name}: {p}")
        else:
            self.passed += 1
            print(f"ok   {name}")


def kubectl():
    exe = shutil.which("kubectl")
    if not exe:
        print("SKIP no kubectl on PATH (Debian package kubernetes-client as a fallback)")
        sys.exit(SKIP)
    r = subprocess.run([exe, "version", "--client", "-o", "json"], capture_output=True, text=True)
    try:
        kv = json.loads(r.stdout).get("kustomizeVersion", "")
    except ValueError:
        kv = ""
    m = re.match(r"v(\d+)", kv)
    if not m or int(m.group(1)) < 4:
        print(f"SKIP {exe} embeds kustomize {kv or 'of an unknown version'}; the manifests need v4 or "
              "newer (components, labels, --load-restrictor)")
        sys.exit(SKIP)
    return exe, kv


def render(exe, rel):
    # no --load-restrictor: what `kubectl apply -k` and GitOps tools do
    r = subprocess.run([exe, "kustomize", os.path.join(K8S, rel)], capture_output=True, text=True)
    if r.returncode != 0:
        raise AssertionError(f"kubectl kustomize {rel}: {r.stderr.strip()}")
    return r.stdout, [d for d in yaml.safe_load_all(r.stdout) if d]


def find(objs, kind, name=None):
    out = [o for o in objs if o["kind"] == kind and (name is None or o["metadata"]["name"] == name)]
    return out


def one(objs, kind, name=None):
    found = find(objs, kind, name)
    if len(found) != 1:
        raise AssertionError(f"expected one {kind} {name or ''}, found {len(found)}")
    return found[0]


def documented():
    """notesd's defaults from docs/configuration.md's settings table, and docs/metrics.md's text."""
    text = open(os.path.join(REPO, "docs", "configuration.md"), encoding="utf-8").read()
    rows = re.findall(r"^\|\s*`--[a-z-]+`\s*\|\s*`([A-Z_]+)`\s*\|\s*`?([^`|]*?)`?\s*\|", text, re.M)
    metrics_doc = open(os.path.join(REPO, "docs", "metrics.md"), encoding="utf-8").read()
    return dict(rows), metrics_doc


def metrics_port_paths(metrics_doc):
    """Paths docs/metrics.md says the metrics port answers (`GET /metrics`, `GET /healthz`, ...)."""
    section = metrics_doc.split("\n## The port\n", 1)[1].split("\n## ", 1)[0]
    return set(re.findall(r"`GET (/[a-z]+)`", section))


def image_pinned(ref):
    if "@sha256:" in ref:
        return True
    last = ref.rsplit("/", 1)[-1]
    return ":" in last and last.split(":", 1)[1] not in ("", "latest")


def pod_specs(objs):
    """(where, pod spec) of every workload."""
    for o in objs:
        if o["kind"] in ("Deployment", "StatefulSet", "Job"):
            yield f"{o['kind']} {o['metadata']['name']}", o["spec"]["template"]["spec"]


def images(objs):
    for where, spec in pod_specs(objs):
        for c in spec.get("containers", []) + spec.get("initContainers", []):
            yield where, c.get("image", "")
    for o in find(objs, "TestRun"):
        for part in ("initializer", "runner", "starter"):
            if (o["spec"].get(part) or {}).get("image"):
                yield f"TestRun {part}", o["spec"][part]["image"]
    for o in find(objs, "Prometheus"):
        yield "Prometheus", o["spec"].get("image", "")
    for o in find(objs, "Cluster"):
        yield "Cluster", o["spec"].get("imageName", "")


def container(spec, name):
    return next(c for c in spec["containers"] if c["name"] == name)


def env_of(c):
    return {e["name"]: e for e in c.get("env", [])}


def port_number(c, port):
    if isinstance(port, int):
        return port
    for p in c.get("ports", []):
        if p.get("name") == port:
            return p["containerPort"]
    return None


def labels_match(selector, labels):
    return bool(selector) and all(labels.get(k) == v for k, v in selector.items())


def sql_file(key):
    """The file of sql/ a ConfigMap key holds: 01-schema.sql -> schema.sql."""
    return re.sub(r"^\d+-", "", key)


def file_bytes(*parts):
    with open(os.path.join(REPO, *parts), "rb") as f:
        return f.read()


# ---------------------------------------------------------------- checks

def check_no_copies():
    """Files under docker/kubernetes/ with the bytes of a file of sql/ or loadtests/
    (the k6 scripts, their lib/, mixes.json): the overlays use the kustomizations
    beside those files as bases, and hold no copies of their own."""
    originals = {}
    for top in ("sql", "loadtests"):
        for root, dirs, files in os.walk(os.path.join(REPO, top)):
            dirs[:] = [d for d in dirs if d not in ("node_modules", "results")]
            for name in files:
                if name.endswith((".sql", ".js", ".json")):
                    path = os.path.join(root, name)
                    originals.setdefault(file_bytes(path), os.path.relpath(path, REPO))
    problems = []
    for root, _, files in os.walk(K8S):
        for name in files:
            path = os.path.join(root, name)
            original = originals.get(file_bytes(path))
            if original:
                problems.append(f"{os.path.relpath(path, REPO)} is a copy of {original}; "
                                f"use the kustomization beside the original as a base")
    return problems


def check_common(rel, text, objs):
    problems = []
    kinds = {o["kind"] for o in objs}
    if kinds != EXPECTED_KINDS[rel]:
        problems.append(f"kinds {sorted(kinds)}, expected {sorted(EXPECTED_KINDS[rel])}")
    for o in objs:
        name = (o.get("metadata") or {}).get("name")
        if not o.get("apiVersion") or not name:
            problems.append(f"{o.get('kind')} without apiVersion or metadata.name")
        want = API_VERSIONS.get(o["kind"])
        if want and o["apiVersion"] != want:
            problems.append(f"{o['kind']} {name}: apiVersion {o['apiVersion']}, expected {want}")
        if o["kind"] != "Namespace" and o["metadata"].get("namespace") != NAMESPACE:
            problems.append(f"{o['kind']} {name} is not in namespace {NAMESPACE}")
    for where, ref in images(objs):
        if not image_pinned(ref):
            problems.append(f"{where}: image {ref!r} has no pinned tag")
    if re.search(r":latest\b", text):
        problems.append("a :latest reference")
    return problems


def check_notesd(objs, defaults, metrics_doc, cnpg):
    problems = []
    dep = one(objs, "Deployment", "notesd")
    spec = dep["spec"]["template"]["spec"]
    pod_labels = dep["spec"]["template"]["metadata"]["labels"]
    if not labels_match(dep["spec"]["selector"]["matchLabels"], pod_labels):
        problems.append("Deployment selector does not match its pod labels")
    c = container(spec, "notesd")
    env = env_of(c)
    port, mport = int(defaults["PORT"]), int(defaults["METRICS_PORT"])
    if port_number(c, "http") != port or port_number(c, "metrics") != mport:
        problems.append(f"container ports http/metrics are {port_number(c, 'http')}/{port_number(c, 'metrics')}, "
                        f"notesd listens on {port}/{mport}")
    for var, want in (("PORT", port), ("METRICS_PORT", mport)):
        if var in env and env[var].get("value") != str(want):
            problems.append(f"env {var}={env[var].get('value')} differs from the container port {want}")
    served = metrics_port_paths(metrics_doc)
    if not {"/healthz", "/readyz"} <= served:
        problems.append(f"docs/metrics.md's metrics port serves {sorted(served)}; /healthz and /readyz expected")
    for probe, path in (("livenessProbe", "/healthz"), ("startupProbe", "/healthz"), ("readinessProbe", "/readyz")):
        get = (c.get(probe) or {}).get("httpGet") or {}
        if get.get("path") != path or get.get("path") not in served:
            problems.append(f"{probe} GETs {get.get('path')}, expected {path} (served: {sorted(served)})")
        if port_number(c, get.get("port")) != mport:
            problems.append(f"{probe} port {get.get('port')!r} is not the metrics port {mport}")
    sc, csc = spec.get("securityContext") or {}, c.get("securityContext") or {}
    user = re.search(r"^USER\s+(\d+)", open(os.path.join(REPO, "docker", "Dockerfile")).read(), re.M).group(1)
    if sc.get("runAsNonRoot") is not True or str(sc.get("runAsUser")) != user:
        problems.append(f"pod must run as non-root UID {user} (the image's USER)")
    if csc.get("readOnlyRootFilesystem") is not True or csc.get("allowPrivilegeEscalation") is not False:
        problems.append("container needs readOnlyRootFilesystem: true and allowPrivilegeEscalation: false")
    tmp = [m for m in c.get("volumeMounts", []) if m["mountPath"] == "/tmp"]
    vols = {v["name"]: v for v in spec.get("volumes", [])}
    if not tmp or "emptyDir" not in vols.get(tmp[0]["name"], {}):
        problems.append("/tmp must be an emptyDir (the root file system is read-only)")
    res = c.get("resources") or {}
    if not (res.get("requests") and res.get("limits")):
        problems.append("container needs resource requests and limits")
    shutdown_ms = int((env.get("SHUTDOWN_TIMEOUT_MS") or {}).get("value") or defaults["SHUTDOWN_TIMEOUT_MS"])
    pre = ((c.get("lifecycle") or {}).get("preStop") or {})
    cmd = (pre.get("exec") or {}).get("command") or []
    pre_s = int(cmd[1]) if cmd[:1] == ["sleep"] and len(cmd) == 2 else int((pre.get("sleep") or {}).get("seconds", -1))
    if pre_s <= 0:
        problems.append("preStop must wait (sleep N) so endpoints drain before SIGTERM")
    grace = spec.get("terminationGracePeriodSeconds", 30)
    if grace < pre_s + shutdown_ms / 1000 + 1:
        problems.append(f"terminationGracePeriodSeconds {grace} < preStop {pre_s} s + "
                        f"SHUTDOWN_TIMEOUT_MS {shutdown_ms} ms + margin")
    ref = ((env.get("DB_URL") or {}).get("valueFrom") or {}).get("secretKeyRef") or {}
    if cnpg:
        cluster = one(objs, "Cluster")["metadata"]["name"]
        if ref != {"name": f"{cluster}-app", "key": "uri"}:
            problems.append(f"DB_URL must come from the operator's Secret {cluster}-app, key uri; got {ref}")
    else:
        secrets = {s["metadata"]["name"]: s for s in find(objs, "Secret")}
        if ref.get("name") not in secrets or ref.get("key") not in (secrets[ref["name"]].get("data") or {}):
            problems.append(f"DB_URL refers to Secret {ref.get('name')} key {ref.get('key')}, which the overlay lacks")

    svc = one(objs, "Service", "notesd")
    if not labels_match(svc["spec"]["selector"], pod_labels):
        problems.append("Service notesd does not select the notesd pods")
    for p in svc["spec"]["ports"]:
        if port_number(c, p.get("targetPort")) is None:
            problems.append(f"Service port {p.get('name')} targets {p.get('targetPort')!r}, not a container port")
    pdb = one(objs, "PodDisruptionBudget", "notesd")
    if not labels_match(pdb["spec"]["selector"]["matchLabels"], pod_labels):
        problems.append("PodDisruptionBudget does not select the notesd pods")
    hpa = one(objs, "HorizontalPodAutoscaler", "notesd")
    t = hpa["spec"]["scaleTargetRef"]
    if (t["kind"], t["name"]) != ("Deployment", "notesd") or hpa["spec"]["maxReplicas"] < hpa["spec"].get("minReplicas", 1):
        problems.append("HorizontalPodAutoscaler must scale Deployment notesd with min <= max")
    return problems


def check_monitoring(objs):
    problems = []
    prom = one(objs, "Prometheus")["spec"]
    if not prom.get("enableRemoteWriteReceiver"):
        problems.append("Prometheus needs enableRemoteWriteReceiver: true (k6 remote write)")
    if prom.get("scrapeInterval") != "1s" or prom.get("scrapeTimeout") not in ("1s", None):
        problems.append("Prometheus must scrape every 1s with a timeout of at most 1s")
    pods = {f"{o['kind']} {o['metadata']['name']}": o for o in objs if o["kind"] in ("Deployment", "StatefulSet")}
    for pm in find(objs, "PodMonitor"):
        name = pm["metadata"]["name"]
        if not labels_match(prom["podMonitorSelector"]["matchLabels"], pm["metadata"].get("labels") or {}):
            problems.append(f"PodMonitor {name} is not selected by the Prometheus")
        targets = [w for w in pods.values()
                   if labels_match(pm["spec"]["selector"]["matchLabels"], w["spec"]["template"]["metadata"]["labels"])]
        if not targets:
            problems.append(f"PodMonitor {name} selects no pods")
            continue
        spec = targets[0]["spec"]["template"]["spec"]
        for ep in pm["spec"]["podMetricsEndpoints"]:
            if not any(port_number(c, ep["port"]) for c in spec["containers"]):
                problems.append(f"PodMonitor {name}: no container port named {ep['port']}")
            if ep.get("interval") != "1s":
                problems.append(f"PodMonitor {name}: interval must be 1s")
    notesd = one(objs, "PodMonitor", "notesd")["spec"]
    dep_labels = one(objs, "Deployment", "notesd")["spec"]["template"]["metadata"]["labels"]
    if dep_labels.get(notesd.get("jobLabel", ""), None) != "notesd":
        problems.append("PodMonitor notesd must set job=notesd (jobLabel naming a pod label whose value is notesd)")
    return problems


def check_statefulset(objs):
    problems = []
    sts = one(objs, "StatefulSet", "notes-db")
    spec = sts["spec"]["template"]["spec"]
    pg = container(spec, "postgres")
    args = " ".join(pg.get("args", []))
    if "shared_preload_libraries=pg_stat_statements" not in args:
        problems.append("PostgreSQL must preload pg_stat_statements")
    probe = (pg.get("readinessProbe") or {}).get("exec", {}).get("command", [])
    if "pg_isready" not in probe or "127.0.0.1" not in probe:
        problems.append("PostgreSQL readiness must be pg_isready -h 127.0.0.1 (TCP)")
    exp = container(spec, "exporter")
    if "--collector.stat_statements" not in exp.get("args", []):
        problems.append("postgres_exporter needs --collector.stat_statements")
    mounts = {m["mountPath"]: m["name"] for m in pg.get("volumeMounts", [])}
    vols = {v["name"]: v for v in spec["volumes"]}
    cm_name = vols[mounts["/docker-entrypoint-initdb.d"]]["configMap"]["name"]
    cm = one(objs, "ConfigMap", cm_name)
    # The image runs the scripts in the order of their names: schema, seed, extension.
    want = ["schema.sql", "seed.sql", "pg_stat_statements.sql"]
    got = [sql_file(key) for key in sorted(cm["data"])]
    if got != want:
        problems.append(f"init scripts {sorted(cm['data'])} run {got}, expected {want} in that order")
    for key in cm["data"]:
        if cm["data"][key].encode() != file_bytes("sql", sql_file(key)):
            problems.append(f"ConfigMap {cm_name} {key} differs from sql/{sql_file(key)}")
    svc = one(objs, "Service", "notes-db")
    url = next(s for s in find(objs, "Secret"))["data"]["url"]
    import base64
    host = re.match(r"postgresql://[^@]*@([^:/]+):(\d+)/", base64.b64decode(url).decode())
    if not host or host.group(1) != svc["metadata"]["name"] or \
       int(host.group(2)) != svc["spec"]["ports"][0]["port"]:
        problems.append("the Secret's url does not point at the notes-db Service")
    return problems


def check_cloudnativepg(objs):
    problems = []
    cl = one(objs, "Cluster")["spec"]
    init = cl["bootstrap"]["initdb"]
    if init.get("database") != "notes" or cl.get("instances", 0) < 1:
        problems.append("Cluster must bootstrap the database notes with at least one instance")
    if not any(k.startswith("pg_stat_statements.") for k in cl["postgresql"]["parameters"]):
        problems.append("Cluster must set a pg_stat_statements.* parameter (the operator then preloads it)")
    refs = init["postInitApplicationSQLRefs"]["configMapRefs"]
    if [sql_file(ref["key"]) for ref in refs] != ["schema.sql"]:
        problems.append(f"the Cluster's bootstrap runs {[ref['key'] for ref in refs]}, expected sql/schema.sql")
    for ref in refs:
        cm = one(objs, "ConfigMap", ref["name"])
        if cm["data"].get(ref["key"], "").encode() != file_bytes("sql", sql_file(ref["key"])):
            problems.append(f"ConfigMap {ref['name']} {ref['key']} differs from sql/{sql_file(ref['key'])}")
    job = one(objs, "Job", "notes-seed")["spec"]["template"]["spec"]
    vols = {v["name"]: v for v in job["volumes"]}
    mount = next(m["mountPath"] for m in job["containers"][0]["volumeMounts"] if m["name"] == "sql")
    cm = one(objs, "ConfigMap", vols["sql"]["configMap"]["name"])
    script = re.search(r"-f " + re.escape(mount.rstrip("/")) + r"/(\S+)", job["containers"][0]["command"][-1])
    if not script or sql_file(script.group(1)) != "seed.sql":
        problems.append("the seed Job does not run the ConfigMap's copy of sql/seed.sql")
    elif cm["data"].get(script.group(1), "").encode() != file_bytes("sql", "seed.sql"):
        problems.append(f"the seed Job's {script.group(1)} differs from sql/seed.sql")
    return problems


def check_k6(objs, monitoring_objs, notesd_objs):
    problems = []
    tr = one(objs, "TestRun")["spec"]
    if not isinstance(tr.get("parallelism"), int) or tr["parallelism"] < 1:
        problems.append("TestRun needs an integer parallelism >= 1")
    script = tr["script"].get("localFile", "")
    cm = one(objs, "ConfigMap", "k6-scripts")
    data = cm.get("data") or {}
    # Every k6 script and lib file, and the mixes they open, byte for byte.
    want = {}
    k6dir = os.path.join(REPO, "loadtests", "k6")
    for name in sorted(os.listdir(k6dir)):
        if name.endswith(".js"):
            want[name] = ("loadtests", "k6", name)
    for name in sorted(os.listdir(os.path.join(k6dir, "lib"))):
        if name.endswith(".js"):
            want[f"lib.{name}"] = ("loadtests", "k6", "lib", name)
    want["mixes.json"] = ("loadtests", "mixes.json")
    if set(data) != set(want):
        problems.append(f"ConfigMap k6-scripts keys {sorted(data)}; loadtests/ has {sorted(want)}")
    for key, parts in want.items():
        if key in data and data[key].encode() != file_bytes(*parts):
            problems.append(f"ConfigMap k6-scripts {key} differs from {'/'.join(parts)}")
    for part in ("initializer", "runner"):
        pod = tr.get(part) or {}
        mounted = {}
        vols = {v["name"]: v for v in pod.get("volumes", [])}
        for m in pod.get("volumeMounts", []):
            v = vols.get(m["name"], {}).get("configMap") or {}
            if v.get("name") == "k6-scripts":
                for item in v.get("items", []):
                    mounted[f"{m['mountPath'].rstrip('/')}/{item['path']}"] = item["key"]
        if set(mounted.values()) != set(data):
            problems.append(f"TestRun {part} does not mount every script: missing "
                            f"{sorted(set(data) - set(mounted.values()))}")
        if mounted.get(script) is None:
            problems.append(f"TestRun {part}: localFile {script} is not mounted")
        for path, key in mounted.items():
            want_parts = want.get(key)
            if want_parts and not path.endswith("/".join(want_parts[1:])):
                problems.append(f"TestRun {part}: {key} mounted at {path}, not as {'/'.join(want_parts[1:])}")
    runner_env = {e["name"]: e.get("value") for e in tr["runner"].get("env", [])}
    args = tr.get("arguments", "")
    if "-o experimental-prometheus-rw" not in args:
        problems.append("TestRun arguments need -o experimental-prometheus-rw")
    if re.search(r"(^|\s)--tag(\s|=)", args):
        problems.append("TestRun arguments must not --tag: it replaces the script's tags "
                        "(runtime, mode, round); TESTID adds testid to them")
    if not runner_env.get("TESTID"):
        problems.append("the TestRun's runners need TESTID (the testid tag of every sample)")
    prom = one(monitoring_objs, "Prometheus")
    want_url = f"http://prometheus-operated.{prom['metadata']['namespace']}.svc:9090/api/v1/write"
    if runner_env.get("K6_PROMETHEUS_RW_SERVER_URL") != want_url:
        problems.append(f"K6_PROMETHEUS_RW_SERVER_URL must be {want_url} (the monitoring Prometheus)")
    if runner_env.get("K6_PROMETHEUS_RW_PUSH_INTERVAL") != "1s":
        problems.append("K6_PROMETHEUS_RW_PUSH_INTERVAL must be 1s")
    svc = one(notesd_objs, "Service", "notesd")
    http = next(p["port"] for p in svc["spec"]["ports"] if p["name"] == "http")
    want_base = f"http://notesd.{svc['metadata']['namespace']}.svc:{http}"
    if runner_env.get("BASE_URL") != want_base:
        problems.append(f"BASE_URL must be the notesd Service, {want_base}")
    if runner_env.get("RT") != "notesd":
        problems.append("RT must be notesd (the name the dashboards and scrape jobs use)")
    return problems


def main():
    exe, kv = kubectl()
    print(f"kubectl {exe}, kustomize {kv}")
    defaults, metrics_doc = documented()
    c = Checks()
    c.run("no copies of sql/ or loadtests/ under docker/kubernetes/", check_no_copies())
    rendered = {}
    for rel in EXPECTED_KINDS:
        try:
            rendered[rel] = render(exe, rel)
            c.run(f"kubectl kustomize {rel}", [])
        except AssertionError as e:
            c.run(f"kubectl kustomize {rel}", [str(e)])
    for rel, (text, objs) in rendered.items():
        c.run(f"{rel}: kinds, names, namespace, pinned images", check_common(rel, text, objs))

    def guarded(name, fn, *args):
        try:
            c.run(name, fn(*args))
        except (AssertionError, KeyError, StopIteration, TypeError, ValueError) as e:
            c.run(name, [f"{type(e).__name__}: {e}"])

    for rel, cnpg in (("overlays/statefulset", False), ("overlays/cloudnativepg", True)):
        if rel in rendered:
            objs = rendered[rel][1]
            guarded(f"{rel}: notesd Deployment, Service, PDB, HPA", check_notesd, objs, defaults, metrics_doc, cnpg)
            guarded(f"{rel}: Prometheus and PodMonitors", check_monitoring, objs)
    if "overlays/statefulset" in rendered:
        guarded("overlays/statefulset: PostgreSQL StatefulSet", check_statefulset, rendered["overlays/statefulset"][1])
    if "overlays/cloudnativepg" in rendered:
        guarded("overlays/cloudnativepg: Cluster and seed Job", check_cloudnativepg,
                rendered["overlays/cloudnativepg"][1])
    if all(k in rendered for k in ("overlays/k6", "overlays/statefulset")):
        guarded("overlays/k6: TestRun and the k6 scripts", check_k6, rendered["overlays/k6"][1],
                rendered["overlays/statefulset"][1], rendered["overlays/statefulset"][1])
    print(f"{c.passed} passed, {c.failed} failed")
    return 1 if c.failed else 0


if __name__ == "__main__":
    sys.exit(main())
