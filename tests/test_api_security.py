"""The REST API against the web and its own port (issue 54, defects 2 and 5).

Each attack is the one the security review made from outside: a page of another origin
posting to a run on loopback (in a real Chromium too), a page that rebinds its name to
127.0.0.1, a large body, many slow connections, DRPC calls holding the page's threads.
The server is a running topology's (``ControlServer``) over a ``Control`` that no run
drives: what it would do is the commands it queues.
"""

from __future__ import annotations

import http.server
import json
import logging
import socket
import subprocess
import threading
import time

import httpx
import pytest

from sparkstorm.control import server as server_module
from sparkstorm.control.api_guard import MAX_BODY_BYTES
from sparkstorm.control.api_model import Control
from sparkstorm.control.drpc import DRPCServer
from sparkstorm.control.server import ControlServer

NAME = "guarded"
BASE = f"/api/v1/topology/{NAME}"


@pytest.fixture
def served():
    control = Control(name=NAME, engine="local", token="unused-on-loopback", loopback=True)
    control.drpc = DRPCServer(["words"])
    server = ControlServer(control, "127.0.0.1", 0)
    server.start()
    try:
        with httpx.Client(base_url=server.url, timeout=10) as client:
            yield control, server, client
    finally:
        control.drpc.close()
        server.stop()


def queued(control: Control) -> list[str]:
    found = []
    while not control.commands.empty():
        found.append(control.commands.get_nowait().action)
    return found


def test_a_rebinding_page_is_refused_by_its_host_name(served):
    control, server, client = served
    port = server.url.rpartition(":")[2]
    rebound = client.get(BASE, headers={"Host": f"attacker.example:{port}"})
    assert rebound.status_code == 403
    assert "Host 'attacker.example:" in rebound.json()["error"]
    assert "sparkstorm.ui.hosts" in rebound.json()["error"]
    for kind in ("/", f"{BASE}/workers/1/log", f"{BASE}/logconfig"):
        assert client.get(kind, headers={"Host": f"evil.test:{port}"}).status_code == 403
    stolen = client.post(
        f"{BASE}/profiling/dumpstack/driver", headers={"Host": f"evil.test:{port}"}
    )
    assert stolen.status_code == 403 and "stacks" not in stolen.text
    for name in ("127.0.0.1", "localhost"):
        assert client.get(BASE, headers={"Host": f"{name}:{port}"}).status_code == 200
    assert queued(control) == []


def test_a_state_changing_request_from_another_origin_is_refused(served):
    control, server, client = served
    port = server.url.rpartition(":")[2]
    for headers in (
        {"Origin": "http://attacker.example"},
        {"Origin": "null"},
        {"Origin": f"http://127.0.0.1:{int(port) + 1}"},  # another port is another origin
        {"Referer": "http://attacker.example/page.html"},
    ):
        for path in ("/deactivate", "/kill/0", "/debug/enable/100"):
            refused = client.post(BASE + path, headers=headers)
            assert refused.status_code == 403, (path, headers, refused.text)
            assert "another origin" in refused.json()["error"]
    body = '{"namedLoggerLevels": {"ROOT": {"target_level": "DEBUG", "timeout": 86400}}}'
    refused = client.post(
        f"{BASE}/logconfig",
        content=body,
        headers={"Origin": "http://attacker.example", "Content-Type": "application/json"},
    )
    assert refused.status_code == 403
    assert queued(control) == []
    own = {"Origin": f"http://127.0.0.1:{port}"}  # the page itself
    assert client.post(f"{BASE}/deactivate", headers=own).status_code == 200
    assert client.post(f"{BASE}/activate").status_code == 200  # the CLI: no Origin
    assert queued(control) == ["deactivate", "activate"]


@pytest.mark.parametrize(
    "content_type",
    ["text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x", None],
)
def test_bodies_are_taken_only_as_json(served, content_type):
    control, _, client = served
    body = '{"namedLoggerLevels": {"ROOT": {"target_level": "DEBUG", "timeout": 30}}}'
    headers = {"Content-Type": content_type} if content_type else {}
    refused = client.post(f"{BASE}/logconfig", content=body, headers=headers)
    assert refused.status_code == 415, refused.text
    assert "application/json" in refused.json()["error"]
    drpc = client.post(f"{BASE}/drpc/words", content="the man", headers=headers)
    assert drpc.status_code == 415
    assert queued(control) == []
    taken = client.post(
        f"{BASE}/logconfig", content=body, headers={"Content-Type": "application/json"}
    )
    assert taken.status_code == 200 and queued(control) == ["log_level"]


def test_every_answer_forbids_framing(served):
    _, _, client = served
    for path in ("/", BASE, "/static/ui.js", "/no/such/route"):
        answer = client.get(path)
        assert answer.headers["x-frame-options"] == "DENY", path
        assert answer.headers["content-security-policy"] == "frame-ancestors 'none'"
        assert answer.headers["x-content-type-options"] == "nosniff"


def test_a_large_body_is_refused_without_being_read_whole(served):
    control, _, client = served
    big = b"x" * (MAX_BODY_BYTES + 1)
    told = client.post(
        f"{BASE}/drpc/words", content=big, headers={"Content-Type": "application/octet-stream"}
    )
    assert told.status_code == 413 and "larger than the API takes" in told.json()["error"]

    def chunks():  # no Content-Length: counted as it arrives
        for _ in range(64):
            yield b"y" * (64 * 1024)

    streamed = client.post(
        f"{BASE}/drpc/words", content=chunks(), headers={"Content-Type": "application/json"}
    )
    assert streamed.status_code == 413
    assert client.get(BASE).status_code == 200
    assert queued(control) == []


def closed(connection: socket.socket) -> bool:
    """Whether the server closed ``connection`` (a FIN, or the RST of one cut at once)."""
    connection.settimeout(2)
    try:
        return connection.recv(1) == b""
    except ConnectionResetError:
        return True


def test_slow_connections_are_capped_and_closed_and_said_once(served, monkeypatch, caplog):
    _, server, client = served
    monkeypatch.setattr(server_module, "MAX_CONNECTIONS", 20)
    monkeypatch.setattr(server_module, "HEADER_SECS", 1.0)
    monkeypatch.setattr(server_module._GuardedH11, "refused", 0)
    host, port = "127.0.0.1", int(server.url.rpartition(":")[2])
    slow = []
    with caplog.at_level(logging.WARNING, logger="sparkstorm.control.server"):
        try:
            for _ in range(60):
                s = socket.create_connection((host, port))
                s.sendall(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n")  # never ends its headers
                slow.append(s)
            time.sleep(0.5)
            assert server_module._GuardedH11.refused >= 40 - 1
            time.sleep(1.5)  # past the header time: every slow one is closed
            for s in slow:
                assert closed(s), "a connection without its headers was held"
            assert client.get(BASE).status_code == 200
        finally:
            for s in slow:
                s.close()
    said = [r.getMessage() for r in caplog.records if "its most" in r.getMessage()]
    assert len(said) == 1, said


SLOW_BODIES = """
import json, socket, sys, time
port, count, hold = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
held, answers = [], {}
for _ in range(count):
    try:
        s = socket.create_connection(("127.0.0.1", port))
        s.sendall(b"POST /api/v1/topology/guarded/activate HTTP/1.1\\r\\nHost: 127.0.0.1\\r\\n"
                  b"Content-Type: application/json\\r\\nContent-Length: 1000\\r\\n\\r\\n")
        held.append(s)
    except OSError:
        pass
print("open", len(held), flush=True)
time.sleep(hold)  # and never send the body
for s in held:
    s.settimeout(0.5)
    try:
        said = s.recv(100).split(b" ")[1].decode()  # the status, or nothing
    except (OSError, IndexError):
        said = "nothing"
    answers[said] = answers.get(said, 0) + 1
print(json.dumps(answers), flush=True)
"""


def test_another_users_slow_bodies_never_lock_the_owner_out(served, monkeypatch):
    """Issue 65, defect 4: 256 connections that sent headers and Content-Length, then
    nothing, held every slot for as long as they liked: the owner got nothing."""
    from sparkstorm.control import api_guard

    control, server, client = served
    monkeypatch.setattr(api_guard, "BODY_SECS", 2.0)
    port = server.url.rpartition(":")[2]
    stranger = subprocess.Popen(  # as user nobody, with the system's Python
        ["/usr/bin/python3", "-c", SLOW_BODIES, port, "300", "3"],
        stdout=subprocess.PIPE,
        text=True,
        user=65534,
    )
    try:
        assert stranger.stdout.readline().startswith("open")
        started = time.monotonic()
        assert client.get("/health").status_code in (200, 503)  # an answer, not a wait
        assert client.post(f"{BASE}/deactivate").status_code == 200
        assert time.monotonic() - started < 2.0, "the owner waited behind a stranger"
        answers = stranger.stdout.readline()
    finally:
        stranger.kill()
        stranger.wait(10)
    counts = json.loads(answers)  # {status, or "nothing": connections}, as it saw them
    assert counts.get("408", 0) >= server_module.MAX_PER_PEER - 1, counts  # each cut off
    assert sum(counts.values()) == 300
    assert queued(control) == ["deactivate"]


def test_a_request_without_the_token_is_refused_before_its_body(monkeypatch):
    control = Control(name=NAME, engine="local", token="the-run-token", loopback=False)
    server = ControlServer(control, "127.0.0.1", 0)
    server.start()
    try:
        host, port = "127.0.0.1", int(server.url.rpartition(":")[2])
        with socket.create_connection((host, port)) as sock:
            sock.sendall(
                f"POST {BASE}/kill/0 HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                "Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n".encode()
            )
            sock.settimeout(2)  # the body never comes: the answer must not wait for it
            assert sock.recv(100).startswith(b"HTTP/1.1 401")
        with httpx.Client(base_url=server.url, timeout=10) as client:
            bearer = {"Authorization": "Bearer the-run-token"}
            assert client.post(f"{BASE}/deactivate", headers=bearer).status_code == 200
        assert queued(control) == ["deactivate"]
    finally:
        server.stop()


def test_waiting_drpc_calls_do_not_starve_the_page(served):
    """45 slow DRPC calls took the 40 threads that serve the page's files: it hung."""
    _, server, client = served
    done = []

    def call():
        with httpx.Client(base_url=server.url, timeout=30) as own:
            answer = own.post(
                f"{BASE}/drpc/words?timeout=4",
                content="never answered",
                headers={"Content-Type": "application/octet-stream"},
            )
            done.append(answer.status_code)

    callers = [threading.Thread(target=call) for _ in range(60)]
    for caller in callers:
        caller.start()
    time.sleep(1.0)
    started = time.monotonic()
    assert client.get("/").status_code == 200
    assert client.get("/static/ui.js").status_code == 200
    assert time.monotonic() - started < 2.0, "the page waited behind the DRPC calls"
    for caller in callers:
        caller.join(30)
    assert done == [504] * 60  # each waited its own 4 s and was told


def test_a_cross_origin_form_in_a_real_browser_changes_nothing(served):
    """An auto-submitting form on another origin killed a run on loopback."""
    from tests.test_web_ui import open_browser

    control, server, _ = served
    target = f"{server.url}{BASE}/kill/0"
    page = f"""<html><body><form id=f method=POST action="{target}"
      enctype="text/plain"><input name='{{"a":"' value='"}}'></form>
      <script>document.getElementById("f").submit()</script></body></html>""".encode()

    class Attacker(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.end_headers()
            self.wfile.write(page)

        def log_message(self, *args):
            pass

    attacker = http.server.HTTPServer(("127.0.0.1", 0), Attacker)
    threading.Thread(target=attacker.serve_forever, daemon=True).start()
    browser = open_browser()
    try:
        browser.get(f"http://127.0.0.1:{attacker.server_address[1]}/")
        deadline = time.monotonic() + 10
        while "403" not in browser.page_source and time.monotonic() < deadline:
            time.sleep(0.1)
        assert "another origin" in browser.page_source  # the form landed, and was refused
        assert queued(control) == []
    finally:
        browser.quit()
        attacker.shutdown()
