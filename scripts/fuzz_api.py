#!/usr/bin/env python3
"""Fuzzes a live Tollgate server with Schemathesis from its own /openapi.json.

Called by scripts/fuzz-api.sh (which installs Schemathesis and finds the
binary). Steps: start `tollgate serve` on a free 127.0.0.1 port with a fresh
database; create runs through the API and collect real run ids, node ids,
tokens and workflow ids; write a schemathesis.toml that feeds them to the
generator (dictionaries bound to the path parameters); run `st run` with
every check and every phase twice, with an admin key and without
credentials; fail on any failed check, on fewer generated cases than
MIN_CASES, or on a panic in the server log.
"""

import argparse
import json
import os
import re
import subprocess
import sys
import shutil
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TENANT = "fuzz"
ADMIN_KEY = "fuzz-admin-key-0123456789"
TOKEN_SECRET = "fuzz-token-secret-0123456789abcdef0123"
MIN_CASES = 2000


def config_text(dir: Path, database_url: str | None) -> str:
    workflows = ROOT / "workflows" / "conformance"
    url = database_url or f"sqlite://{dir / 'fuzz.db'}"
    return f"""
[server]
bind = "127.0.0.1:0"
tenant = "{TENANT}"
timer_interval_ms = 200

[database]
url = {json.dumps(url)}

[workflows]
dirs = [{json.dumps(str(workflows))}]

[[principals]]
id = "fuzzer"
name = "Fuzz Admin"
email = "fuzzer@example.com"
groups = ["finance"]
roles = ["cfo"]

[[api_keys]]
key = "{ADMIN_KEY}"
principal = "fuzzer"
scopes = ["admin"]
label = "schemathesis"

[[token_keys]]
kid = "fz"
secret = "{TOKEN_SECRET}"
"""


class Server:
    """`tollgate serve` as a child process; its stdout and stderr go to a log file."""

    def __init__(self, bin: str, dir: Path, log: Path, database_url: str | None):
        cfg = dir / "tollgate.toml"
        cfg.write_text(config_text(dir, database_url))
        env = {k: v for k, v in os.environ.items() if not k.startswith("TOLLGATE")}
        env.update(RUST_LOG="warn", NO_COLOR="1", RUST_BACKTRACE="1")
        self.log = log
        self.logf = open(log, "w")
        self.proc = subprocess.Popen(
            [str(Path(bin).resolve()), "serve", "--config", str(cfg)],
            cwd=dir,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=self.logf,
            text=True,
        )
        found = threading.Event()
        self.base = None

        def read():
            for line in self.proc.stdout:
                self.logf.write(line)
                self.logf.flush()
                m = re.match(r"tollgate listening on (http://\S+)", line)
                if m and not found.is_set():
                    self.base = m.group(1)
                    found.set()

        threading.Thread(target=read, daemon=True).start()
        if not found.wait(60):
            self.stop()
            sys.exit(f"fuzz: the server did not start; see {log}")

    def call(self, method, path, body=None, key=ADMIN_KEY):
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.base + path, data=data, method=method)
        req.add_header("Accept", "application/json")
        if data is not None:
            req.add_header("Content-Type", "application/json")
        if key:
            req.add_header("Authorization", f"Bearer {key}")
        try:
            with urllib.request.urlopen(req, timeout=30) as r:
                return r.status, json.loads(r.read() or b"null")
        except urllib.error.HTTPError as e:
            return e.code, json.loads(e.read() or b"null")

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
        self.logf.close()


def seg(run_id: str) -> str:
    return run_id.replace("~", "~7E").replace("/", "~2F")


def seed(s: Server) -> dict:
    """Real ids for the generator: runs (waiting, decided, cancelled, done),
    their node ids, resolve and inspect tokens, workflow ids, outbox ids."""
    runs, terminal = [], []
    for wf, n in [
        ("conformance-approval", 3),
        ("conformance-approval-reject-routed", 2),
        ("conformance-clarification", 2),
        ("conformance-cancellable", 2),
        ("conformance-noop", 2),
    ]:
        for _ in range(n):
            st, body = s.call("POST", "/runs", {"workflowId": wf, "inputs": {"amount": 12.5}})
            if st != 201:
                sys.exit(f"fuzz: seeding POST /runs {wf}: {st} {body}")
            runs.append(body["runId"])
    time.sleep(1.0)
    # One of each decided state: approved, cancelled.
    approval = runs[0]
    s.call("POST", f"/runs/{seg(approval)}/interrupts/gate", {"resumeValue": {"action": "approve"}})
    cancelled = runs[9]
    s.call("POST", f"/runs/{seg(cancelled)}/cancel", {"reason": "fuzz seed"})
    tokens = []
    st, listing = s.call("GET", "/interrupts?status=pending&limit=500")
    for i in listing.get("interrupts", []):
        for intent in ("resolve", "inspect"):
            st, view = s.call("GET", f"/runs/{seg(i['runId'])}/interrupts/{i['nodeId']}?intent={intent}")
            if st == 200 and view.get("token"):
                tokens.append(view["token"])
    for r in runs:
        st, snap = s.call("GET", f"/runs/{seg(r)}")
        if snap.get("status") in ("completed", "failed", "cancelled"):
            terminal.append(r)
    st, wfs = s.call("GET", "/workflows")
    workflows = [w["id"] for w in wfs.get("workflows", [])]
    nodes = set()
    for w in workflows:
        st, d = s.call("GET", f"/workflows/{w}")
        nodes.update(n["id"] for n in d.get("nodes", []))
    st, outbox = s.call("GET", "/admin/outbox")
    outbox_ids = [m["id"] for m in outbox.get("items", [])] or [1]
    if not tokens or not terminal:
        sys.exit(f"fuzz: seeding found no tokens ({len(tokens)}) or no ended runs ({len(terminal)})")
    return {
        "runs": [seg(r) for r in runs],
        "terminal_runs": [seg(r) for r in terminal],
        "nodes": sorted(nodes),
        "tokens": tokens,
        "workflows": workflows,
        "outbox": outbox_ids,
    }


def toml_list(values) -> str:
    return "[" + ", ".join(json.dumps(v) for v in values) + "]"


def st_config(ids: dict, examples: int) -> str:
    """schemathesis.toml: the seeded ids as dictionaries bound to parameters.
    The probability leaves room for generated values (unknown and malformed ids)."""
    dicts = "\n".join(
        f"[dictionaries.{name}]\nvalues = {toml_list(values)}\n" for name, values in ids.items()
    )
    return f"""# Written by scripts/fuzz_api.py for one run; see docs/api.md ("Fuzzing").
request-timeout = 20
max-stream-events = 4

[generation]
max-examples = {examples}

{dicts}
[parameters]
"path.runId" = {{ dictionary = "runs", probability = 0.6 }}
"path.nodeId" = {{ dictionary = "nodes", probability = 0.6 }}
"path.token" = {{ dictionary = "tokens", probability = 0.6 }}
"path.workflowId" = {{ dictionary = "workflows", probability = 0.5 }}
"query.workflowId" = {{ dictionary = "workflows", probability = 0.5 }}
"path.outboxId" = {{ dictionary = "outbox", probability = 0.5 }}
"body.workflowId" = {{ dictionary = "workflows", probability = 0.6 }}

# An open event stream lasts until its run ends: stream ended runs (the
# stream closes after the last event) so that no case waits for a timeout.
[[operations]]
include-operation-id = "streamRunEvents"
parameters = {{ "path.runId" = {{ dictionary = "terminal_runs", probability = 0.7 }} }}

# A long poll waits up to `timeout` seconds for an event: ask for the least.
[dictionaries.short_timeout]
values = [1]

[[operations]]
include-operation-id = "pollRunEvents"
parameters = {{ "path.runId" = {{ dictionary = "terminal_runs", probability = 0.6 }}, "query.timeout" = {{ dictionary = "short_timeout", probability = 1.0 }} }}

# Semantic checks the schema cannot state (docs/api.md, "Fuzzing"): a
# schema-valid body may still be refused with 400 naming the member.
[[operations]]
include-operation-id-regex = "^(createRun|resolveInterruptByRun|resolveInterruptByToken|putWorkflow|createDelegation|reassignInterrupt)$"
checks.positive_data_acceptance.expected-statuses = ["2xx", "3xx", "400", "401", "403", "404", "409", "410", "429", "5xx"]
"""


def run_st(st: str, base: str, cfg: Path, out: Path, name: str, seed: int, headers: list) -> tuple:
    report = out / name
    cmd = [
        st,
        "--config-file",
        str(cfg),
        "run",
        f"{base}/openapi.json",
        "--checks",
        "all",
        "--phases",
        "examples,coverage,fuzzing,stateful",
        # One worker: Hypothesis under threads hit a CPython 3.11 SystemError
        # (AST recursion depth) in Schemathesis itself, not in the server.
        "--workers",
        "1",
        "--seed",
        str(seed),
        "--report",
        "junit,vcr",
        "--report-dir",
        str(report),
        "--no-color",
    ]
    for h in headers:
        cmd += ["--header", h]
    print(f"=== fuzz [{name}]: {' '.join(c if 'Bearer' not in c else 'Authorization: Bearer ***' for c in cmd)}", flush=True)
    started = time.time()
    # In the output directory: Schemathesis and Hypothesis keep their crash
    # files and example databases (`.schemathesis/`, `.hypothesis/`) in the
    # working directory, and `st replay` reads them from there.
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=out)
    (out / f"{name}.txt").write_text(p.stdout)
    print(p.stdout[-6000:], flush=True)
    m = re.search(r"Test cases:\s*\n?\s*(\d+) generated", p.stdout) or re.search(r"(\d+) generated", p.stdout)
    cases = int(m.group(1)) if m else 0
    print(f"=== fuzz [{name}]: exit {p.returncode}, {cases} cases, {time.time() - started:.0f} s", flush=True)
    return p.returncode, cases


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--st", required=True)
    ap.add_argument("--examples", type=int, default=60)
    ap.add_argument("--out", default="target/fuzz")
    ap.add_argument("--seed", type=int)
    ap.add_argument("--database-url", help="an empty PostgreSQL database (default: a fresh SQLite file)")
    args = ap.parse_args()
    out = Path(args.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    seed_value = args.seed if args.seed is not None else int.from_bytes(os.urandom(4), "big")
    print(f"=== fuzz: seed {seed_value} (FUZZ_SEED={seed_value} scripts/fuzz-api.sh repeats this run)", flush=True)
    log = out / "server.log"
    failed = False
    total = 0
    # The server's configuration and database stay in OUT/server after the
    # run, so a failing case can be replayed against the same data.
    home = out / "server"
    shutil.rmtree(home, ignore_errors=True)
    home.mkdir()
    server = Server(args.bin, home, log, args.database_url)
    try:
        ids = seed(server)
        (out / "seed.json").write_text(json.dumps(ids, indent=2))
        cfg = out / "schemathesis.toml"
        cfg.write_text(st_config(ids, args.examples))
        print(f"=== fuzz: server {server.base}; {len(ids['runs'])} runs, {len(ids['tokens'])} tokens seeded", flush=True)
        for name, headers in [
            ("with-key", [f"Authorization: Bearer {ADMIN_KEY}"]),
            ("without-credentials", []),
        ]:
            code, cases = run_st(args.st, server.base, cfg, out, name, seed_value, headers)
            total += cases
            failed |= code != 0
    finally:
        server.stop()
    text = log.read_text(errors="replace")
    panics = [l for l in text.splitlines() if "panicked" in l]
    if panics:
        print("=== fuzz: the server log has panics:\n" + "\n".join(panics[:20]))
        failed = True
    if total < MIN_CASES:
        print(f"=== fuzz: only {total} generated cases (at least {MIN_CASES} wanted)")
        failed = True
    print(f"=== fuzz: {total} cases in all; reports and the server log in {out}")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
