"""Shared pieces of the proposer tests: a tiny real search space and a scripted chat-completions server.

The server is a real http.server on loopback speaking the OpenAI chat-completions protocol; each
request takes the next scripted step (a reply, an HTTP status, or a delay), the last step repeats.
"""
from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from constraints.case import Case
from constraints.check import check_case
from constraints.models.load import load_model
from constraints.spec import JobSpec, Placement
from hardware.profile import load_profile
from solver.space import build_space
from solver.tables.build import build_tables

# Llama-3.1-8B on one H100 node, 72 declared points: solves in well under a second
TINY = {"tp": [1, 2, 4], "pp": [1, 2], "vpp": [1], "cp": [1], "mbs": [1],
        "recompute": ["none", "selective:core_attn", "full:uniform:1"], "schedule": ["1f1b"],
        "dp_sharding": ["distributed_optimizer", "none"], "acc_split": [False]}


def tables_for(model="Llama-3.1-8B", nodes=1, seq=4096, gbs=16, hw="h100-sxm-80gb", pins=None, ranges=None, margin=0.0):
    m = load_model(model)
    job = JobSpec(seq_length=seq, global_batch_size=gbs)
    space = build_space(m, job, Placement(hardware=hw, num_nodes=nodes, gpus_per_node=8), pins=pins, ranges=ranges)
    return build_tables(space, load_profile(hw), margin)


def assert_all_legal(tables, result, margin=0.0) -> None:
    sp = tables.space
    assert result.ranked, "expected at least one recipe"
    for r in result.ranked:
        rep = check_case(Case(model=sp.model, job=sp.job, recipe=r.recipe, placement=sp.placement), tables.profile,
                         margin_fraction=margin)
        assert rep.ok, rep.violations


def completion(content: str) -> dict:
    return {"id": "chatcmpl-test", "object": "chat.completion", "created": 0, "model": "test-model",
            "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": content}}]}


class ScriptedServer:
    """Steps: ("reply", content_str) | ("status", code) | ("slow", seconds, content_str) | ("raw", bytes) |
    ("trickle", seconds_per_byte, content_str): the whole HTTP response, status line first, one byte at a time."""

    def __init__(self, steps: list[tuple]) -> None:
        self.steps = list(steps)
        self.requests: list[dict[str, Any]] = []
        self.lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:  # keep test output quiet
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", 0))
                body = json.loads(self.rfile.read(length) or b"{}")
                with server.lock:
                    server.requests.append({"path": self.path, "headers": dict(self.headers), "body": body})
                    step = server.steps[min(len(server.requests) - 1, len(server.steps) - 1)]
                try:
                    self._answer(step)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (timeout test)

            def _answer(self, step) -> None:
                kind = step[0]
                if kind == "trickle":
                    payload = json.dumps(completion(step[2])).encode()
                    head = (f"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {len(payload)}"
                            "\r\n\r\n").encode()
                    for i in range(len(head + payload)):
                        self.wfile.write((head + payload)[i:i + 1])
                        self.wfile.flush()
                        time.sleep(step[1])
                    return
                if kind == "slow":
                    time.sleep(step[1])
                    step = ("reply", step[2])
                    kind = "reply"
                if kind == "status":
                    self.send_response(step[1])
                    self.send_header("Content-Type", "application/json")
                    payload = json.dumps({"error": {"message": "scripted failure"}}).encode()
                    self.send_header("Content-Length", str(len(payload)))
                    self.end_headers()
                    self.wfile.write(payload)
                    return
                payload = step[1] if kind == "raw" else json.dumps(completion(step[1])).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def __enter__(self) -> "ScriptedServer":
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
