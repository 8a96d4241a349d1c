"""Drives a real Tollgate server with the official OpenWOP v2 Python SDK.

The SDK (`openwop-client`, pinned in requirements.txt) is used unmodified and
only through its public API: if it cannot talk to Tollgate, Tollgate is off
the OpenWOP v2 wire format and this test must fail, not be bent around it.

The server is the built binary (`target/debug/tollgate`, or `$TOLLGATE_BIN`),
started with a fresh SQLite database on 127.0.0.1 port 0 and the conformance
fixtures from `workflows/conformance`. Run it with `scripts/sdk-test.sh`.
"""

from __future__ import annotations

import os
import re
import subprocess
import threading
import time
from pathlib import Path
from typing import Callable, Iterator

import pytest
from openwop_client import (
    CancelRunRequest,
    CreateRunRequest,
    OpenwopClient,
    ResolveInterruptRequest,
    RunEventDoc,
    RunSnapshot,
    WopError,
    is_terminal_run_status,
    project_id,
)

ROOT = Path(__file__).resolve().parents[2]
WORKFLOWS = ROOT / "workflows" / "conformance"
BIN = Path(os.environ.get("TOLLGATE_BIN", ROOT / "target" / "debug" / "tollgate"))
API_KEY = "sdk-key-0123456789abcdef"
STARTUP_TIMEOUT_S = 60.0
WAIT_TIMEOUT_S = 15.0

# What the reference host emits for one approval gate that is accepted
# (digest §2, "Reference-host order").
ACCEPT_ORDER = [
    "node.started",
    "interrupt.requested",
    "node.suspended",
    "interrupt.resolved",
    "node.resumed",
    "node.completed",
    "run.completed",
]
# v2 grammars (digest §2).
EVENT_ID = re.compile(r"^[A-Za-z0-9._~-]{16,128}$")
RUN_ID = re.compile(r"^(anon:)?[A-Za-z0-9._~-]{1,128}/[A-Za-z0-9._~-]{16,128}$")


# ── the live server ──────────────────────────────────────────────────────


class TollgateServer:
    """A `tollgate serve` child process; its output goes to a log file."""

    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir
        self.log_path = workdir / "server.log"
        self.url: str | None = None
        self._proc: subprocess.Popen[bytes] | None = None
        self._log_lock = threading.Lock()
        self._found = threading.Event()

    def start(self) -> None:
        if not BIN.is_file():
            pytest.fail(
                f"no Tollgate binary at {BIN}: build it with "
                "`source scripts/env.sh && cargo build -p tollgate-server` "
                "or point TOLLGATE_BIN at one"
            )
        config = self.workdir / "tollgate.toml"
        config.write_text(
            f"""
[server]
bind = "127.0.0.1:0"
timer_interval_ms = 50

[database]
url = "sqlite://{self.workdir / 't.db'}"

[workflows]
dirs = [{_toml_str(WORKFLOWS)}]

[[principals]]
id = "sdk"
name = "SDK test"

[[api_keys]]
key = "{API_KEY}"
principal = "sdk"
scopes = ["admin"]
label = "openwop-client end-to-end test"
"""
        )
        # A stray TOLLGATE__* variable would override the file (configuration.md).
        env = {k: v for k, v in os.environ.items() if not k.startswith("TOLLGATE_")}
        env.setdefault("RUST_LOG", "warn")
        env["NO_COLOR"] = "1"
        self._proc = subprocess.Popen(
            [str(BIN), "serve", "--config", str(config)],
            cwd=self.workdir,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            env=env,
        )
        # Logs share stdout with the banner, so stdout is drained for the
        # whole life of the server or the child would block on a full pipe.
        threading.Thread(target=self._drain, daemon=True).start()
        deadline = time.monotonic() + STARTUP_TIMEOUT_S
        while not self._found.wait(0.1):
            if self._proc.poll() is not None or time.monotonic() > deadline:
                self._found.wait(0.5)  # let the drain thread write the last lines
                code = self._proc.poll()
                self.stop()
                pytest.fail(
                    f"tollgate did not print its address (exit code {code}):\n{self.log_tail()}"
                )

    def _drain(self) -> None:
        assert self._proc is not None and self._proc.stdout is not None
        banner = re.compile(r"tollgate listening on (http://\S+)")
        with open(self.log_path, "ab") as log:
            for raw in self._proc.stdout:
                with self._log_lock:
                    log.write(raw)
                    log.flush()
                if self.url is None:
                    m = banner.search(raw.decode("utf-8", errors="replace"))
                    if m:
                        self.url = m.group(1).rstrip("/")
                        self._found.set()

    def log_tail(self, lines: int = 60) -> str:
        with self._log_lock:
            if not self.log_path.exists():
                return "(no output)"
            text = self.log_path.read_text(errors="replace")
        return "\n".join(text.splitlines()[-lines:])

    def stop(self) -> None:
        proc = self._proc
        if proc is None or proc.poll() is not None:
            return
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=15)


def _toml_str(path: Path) -> str:
    return '"' + str(path).replace("\\", "\\\\").replace('"', '\\"') + '"'


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TollgateServer]:
    srv = TollgateServer(tmp_path_factory.mktemp("tollgate-sdk"))
    srv.start()
    try:
        yield srv
    finally:
        srv.stop()


@pytest.fixture(scope="module")
def client(server: TollgateServer) -> OpenwopClient:
    assert server.url is not None
    return OpenwopClient(base_url=server.url, api_key=API_KEY, timeout=30.0)


# ── helpers, all on the SDK's public API ─────────────────────────────────


def wait_for(
    client: OpenwopClient, run_id: str, done: Callable[[RunSnapshot], bool], what: str
) -> RunSnapshot:
    """Polls `runs_get` (GET /runs/{runId}) until `done` holds."""
    deadline = time.monotonic() + WAIT_TIMEOUT_S
    snap = client.runs_get(run_id)
    while not done(snap):
        if time.monotonic() > deadline:
            pytest.fail(f"run {run_id} never reached {what}; last snapshot: {snap}")
        time.sleep(0.05)
        snap = client.runs_get(run_id)
    return snap


def wait_suspended(client: OpenwopClient, run_id: str, status: str, node_id: str) -> RunSnapshot:
    snap = wait_for(
        client,
        run_id,
        lambda s: s.status == status or is_terminal_run_status(s.status),
        f"status {status}",
    )
    assert snap.status == status, snap
    assert snap.currentNodeId == node_id, snap
    return snap


def wait_terminal(client: OpenwopClient, run_id: str) -> RunSnapshot:
    return wait_for(client, run_id, lambda s: is_terminal_run_status(s.status), "a terminal status")


def poll_all_events(client: OpenwopClient, run_id: str) -> list[RunEventDoc]:
    """Reads the whole log of a terminal run with `runs_poll_events`
    (GET /runs/{runId}/events/poll?afterSequence=), page by page."""
    events: list[RunEventDoc] = []
    cursor: int | None = None
    deadline = time.monotonic() + WAIT_TIMEOUT_S
    while True:
        page = client.runs_poll_events(run_id, after_sequence=cursor, timeout_seconds=1)
        assert page.runId == run_id
        events.extend(page.events)
        if page.events:
            assert page.lastSequence == page.events[-1].sequence
            cursor = page.lastSequence
        else:
            assert page.lastSequence == -1  # the closed poll body: -1 when empty
            if page.isTerminal:
                return events
        if time.monotonic() > deadline:
            pytest.fail(f"poll of {run_id} never ended: {[e.type for e in events]}")


def stream_all_events(client: OpenwopClient, run_id: str) -> list[RunEventDoc]:
    """Reads the log over SSE with `runs_events` (GET /runs/{runId}/events);
    the SDK's generator ends by itself after the terminal event."""
    return list(client.runs_events(run_id, timeout_seconds=10, reconnect=False))


class LiveStream:
    """`runs_events` consumed on a thread while the run is still going."""

    def __init__(self, client: OpenwopClient, run_id: str) -> None:
        self.events: list[RunEventDoc] = []
        self.error: BaseException | None = None
        self._seen = threading.Condition()
        self._thread = threading.Thread(target=self._run, args=(client, run_id), daemon=True)
        self._thread.start()

    def _run(self, client: OpenwopClient, run_id: str) -> None:
        try:
            for event in client.runs_events(run_id, timeout_seconds=WAIT_TIMEOUT_S):
                with self._seen:
                    self.events.append(event)
                    self._seen.notify_all()
        except BaseException as err:  # reported by wait_for / finish
            self.error = err
        finally:
            with self._seen:
                self._seen.notify_all()

    def wait_for(self, type_: str) -> None:
        deadline = time.monotonic() + WAIT_TIMEOUT_S
        with self._seen:
            while not any(e.type == type_ for e in self.events):
                left = deadline - time.monotonic()
                if self.error is not None or not self._thread.is_alive() or left <= 0:
                    pytest.fail(f"SSE never delivered {type_}: {self.error!r} {[e.type for e in self.events]}")
                self._seen.wait(left)

    def finish(self) -> list[RunEventDoc]:
        self._thread.join(WAIT_TIMEOUT_S)
        assert not self._thread.is_alive(), "the SDK's SSE stream did not end after the terminal event"
        assert self.error is None, repr(self.error)
        return self.events


def check_log(run_id: str, events: list[RunEventDoc]) -> None:
    assert events, "empty event log"
    assert [e.sequence for e in events] == list(range(len(events))), "sequence must run 0,1,2,…"
    for e in events:
        assert e.runId == run_id
        assert EVENT_ID.match(e.eventId), e.eventId
        assert e.schemaVersion >= 1
        assert e.timestamp
    assert len({e.eventId for e in events}) == len(events), "eventIds must be unique"


def assert_in_order(types: list[str], expected: list[str]) -> None:
    """Each expected type occurs exactly once, in this order."""
    for t in expected:
        assert types.count(t) == 1, f"{t} occurs {types.count(t)} times in {types}"
    positions = [types.index(t) for t in expected]
    assert positions == sorted(positions), f"expected order {expected}, got {types}"


def one(events: list[RunEventDoc], type_: str) -> RunEventDoc:
    found = [e for e in events if e.type == type_]
    assert len(found) == 1, f"{type_}: {[e.type for e in events]}"
    return found[0]


def start(client: OpenwopClient, workflow_id: str) -> str:
    resp = client.runs_create(CreateRunRequest(workflowId=workflow_id, inputs={}))
    assert RUN_ID.match(resp.runId), resp.runId
    assert resp.status in ("pending", "running", "waiting-approval", "waiting-input"), resp
    # Links name the run by its one-segment wire form (identity.md §5).
    assert resp.eventsUrl.endswith(f"/runs/{project_id(resp.runId)}/events"), resp.eventsUrl
    return resp.runId


# ── tests ────────────────────────────────────────────────────────────────


def test_discovery(client: OpenwopClient) -> None:
    caps = client.discovery_capabilities()  # GET /.well-known/openwop
    assert caps.protocolVersions and all(v.startswith("2.") for v in caps.protocolVersions)
    assert caps.preferredVersion in caps.protocolVersions
    assert caps.eventLogSchemaVersion == 3
    interrupt = caps.family("interrupt")
    assert interrupt is not None, caps.raw
    assert "hs256" in interrupt.facets["tokenAlgs"]
    fixtures = caps.raw.get("fixtures") or []
    assert "conformance-approval" in fixtures
    assert "conformance-clarification" in fixtures


def test_approval_accept_completes(client: OpenwopClient) -> None:
    run_id = start(client, "conformance-approval")
    snap = wait_suspended(client, run_id, "waiting-approval", "gate")
    assert snap.workflowId == "conformance-approval"
    assert snap.owner.subject.subjectId == "sdk"
    assert snap.eventLogSchemaVersion == 3

    # Subscribe over SSE (SDK defaults: resumable) while the run waits, so the
    # events after the resolve arrive live on an open stream.
    live = LiveStream(client, run_id)
    live.wait_for("node.suspended")

    resp = client.interrupts_resolve_by_run(
        run_id, "gate", ResolveInterruptRequest(resumeValue={"action": "accept"})
    )
    assert (resp.runId, resp.nodeId) == (run_id, "gate")
    assert resp.status in ("running", "completed"), resp

    snap = wait_terminal(client, run_id)
    assert snap.status == "completed", snap
    assert snap.error is None
    assert snap.currentNodeId is None
    assert snap.completedAt

    events = poll_all_events(client, run_id)
    check_log(run_id, events)
    types = [e.type for e in events]
    assert_in_order(types, ACCEPT_ORDER)
    assert types[-1] == "run.completed"

    requested = one(events, "interrupt.requested").payload
    assert requested["kind"] == "approval"
    assert "accept" in requested["data"]["actions"]
    suspended = one(events, "node.suspended").payload
    assert suspended["nodeId"] == "gate"
    resolved = one(events, "interrupt.resolved").payload
    assert resolved["nodeId"] == "gate"
    assert resolved["interruptId"] == suspended["interruptId"]
    assert resolved["action"] == "accept"
    assert resolved["decision"] == "granted"
    # Every recorded approval says when it was decided: the server's time when the client sent none.
    decided = one(events, "node.completed").payload["outputs"]["resumeValue"]
    assert decided.pop("decidedAt").endswith("Z")
    assert decided == {"action": "accept"}
    assert resolved["resumeValue"]["decidedAt"].endswith("Z")

    # The SSE channel serves the same log, live and after the fact, and the
    # SDK's stream ends by itself on run.completed.
    want = [(e.sequence, e.type, e.eventId) for e in events]
    assert [(e.sequence, e.type, e.eventId) for e in live.finish()] == want
    assert [(e.sequence, e.type, e.eventId) for e in stream_all_events(client, run_id)] == want


def test_clarification_answers_complete(client: OpenwopClient) -> None:
    run_id = start(client, "conformance-clarification")
    wait_suspended(client, run_id, "waiting-input", "ask")

    answers = {"answers": {"q1": "blue"}}
    resp = client.interrupts_resolve_by_run(run_id, "ask", ResolveInterruptRequest(resumeValue=answers))
    assert (resp.runId, resp.nodeId) == (run_id, "ask")
    assert resp.status in ("running", "completed"), resp

    snap = wait_terminal(client, run_id)
    assert snap.status == "completed", snap

    events = poll_all_events(client, run_id)
    check_log(run_id, events)
    assert_in_order([e.type for e in events], ACCEPT_ORDER)
    requested = one(events, "interrupt.requested").payload
    assert requested["kind"] == "clarification"
    assert [q["id"] for q in requested["data"]["questions"]] == ["q1"]
    assert one(events, "interrupt.resolved").payload["resumeValue"] == answers
    assert one(events, "node.completed").payload["outputs"]["resumeValue"] == answers


def test_approval_reject_fails_run(client: OpenwopClient) -> None:
    run_id = start(client, "conformance-approval")
    wait_suspended(client, run_id, "waiting-approval", "gate")

    resp = client.interrupts_resolve_by_run(
        run_id, "gate", ResolveInterruptRequest(resumeValue={"action": "reject"})
    )
    assert (resp.runId, resp.nodeId) == (run_id, "gate")
    assert resp.status == "failed", resp  # the reject ended the run (RFC 0223)

    snap = wait_terminal(client, run_id)
    assert snap.status == "failed", snap
    assert snap.error is not None and snap.error.code == "approval_rejected", snap

    events = poll_all_events(client, run_id)
    check_log(run_id, events)
    types = [e.type for e in events]
    assert_in_order(
        types,
        ["node.started", "interrupt.requested", "node.suspended", "interrupt.resolved", "node.failed", "run.failed"],
    )
    assert "node.completed" not in types and "run.completed" not in types
    resolved = one(events, "interrupt.resolved").payload
    assert (resolved["action"], resolved["decision"]) == ("reject", "rejected")
    assert one(events, "node.failed").payload["error"]["code"] == "approval_rejected"
    run_failed = one(events, "run.failed").payload
    assert run_failed["error"]["code"] == "approval_rejected"
    assert run_failed.get("failedNodeId") == "gate"

    # A second resolve of a decided interrupt is refused, through the SDK's error.
    with pytest.raises(WopError) as err:
        client.interrupts_resolve_by_run(run_id, "gate", ResolveInterruptRequest(resumeValue={"action": "accept"}))
    assert err.value.status == 409
    assert err.value.envelope is not None and err.value.envelope.error == "interrupt_already_resolved"


def test_invalid_action_is_validation_error(client: OpenwopClient) -> None:
    run_id = start(client, "conformance-approval")
    wait_suspended(client, run_id, "waiting-approval", "gate")

    for bad in ({"action": "approve-please"}, {}, {"action": "timeout"}):
        with pytest.raises(WopError) as err:
            client.interrupts_resolve_by_run(run_id, "gate", ResolveInterruptRequest(resumeValue=bad))
        assert err.value.status == 400, (bad, err.value.raw_text)
        env = err.value.envelope
        assert env is not None, err.value.raw_text  # the closed {error, message, details?} envelope
        assert env.error == "validation_error", (bad, env)
        assert env.message

    # A refused resume changes nothing: the gate still waits and still accepts.
    snap = client.runs_get(run_id)
    assert (snap.status, snap.currentNodeId) == ("waiting-approval", "gate")
    types = [e.type for e in poll_all_events_until(client, run_id, "node.suspended")]
    assert "interrupt.resolved" not in types

    cancelled = client.runs_cancel(run_id, CancelRunRequest(reason="sdk test cleanup"))
    assert cancelled.status in ("cancelling", "cancelled")
    assert wait_terminal(client, run_id).status == "cancelled"


def test_error_envelopes(client: OpenwopClient, server: TollgateServer) -> None:
    with pytest.raises(WopError) as err:
        client.runs_get("default/0123456789abcdef0123456789abcdef")
    assert err.value.status == 404
    assert err.value.envelope is not None and err.value.envelope.error == "not_found"

    assert server.url is not None
    stranger = OpenwopClient(base_url=server.url, api_key="not-a-key-0123456789")
    with pytest.raises(WopError) as err:
        stranger.runs_create(CreateRunRequest(workflowId="conformance-approval"))
    assert err.value.status == 401
    assert err.value.envelope is not None and err.value.envelope.error == "unauthenticated"


def poll_all_events_until(client: OpenwopClient, run_id: str, last_type: str) -> list[RunEventDoc]:
    """The log of a run that is still live, read up to and including `last_type`."""
    events: list[RunEventDoc] = []
    cursor: int | None = None
    deadline = time.monotonic() + WAIT_TIMEOUT_S
    while not any(e.type == last_type for e in events):
        if time.monotonic() > deadline:
            pytest.fail(f"{last_type} never appeared: {[e.type for e in events]}")
        page = client.runs_poll_events(run_id, after_sequence=cursor, timeout_seconds=1)
        events.extend(page.events)
        if page.events:
            cursor = page.lastSequence
    return events
