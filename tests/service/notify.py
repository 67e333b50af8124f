#!/usr/bin/env python3
"""tern speaks systemd's notification protocol (dist/tern.service is Type=notify).

NOTIFY_SOCKET names a Unix datagram socket this script binds and reads, as systemd
would; WATCHDOG_USEC asks for the watchdog, WATCHDOG_PID names tern (a shell exports
its own pid and execs tern). The messages must come in this order:

1. READY=1 once every core answers (and tern answers a query by then);
2. WATCHDOG=1 pings, at half the interval, after READY=1 only;
3. SIGHUP: RELOADING=1 with MONOTONIC_USEC, then READY=1, and the zone changed on disk
   is served; a SIGHUP with a broken configuration (the reload is aborted) also ends
   with READY=1;
4. SIGTERM: STOPPING=1, then tern exits 0.

  TERN_BIN=target/release/tern python3 tests/service/notify.py
"""

from __future__ import annotations

import pathlib
import signal
import socket
import tempfile
import time

import common
from common import Failure

SCRIPT = "notify.py"
WATCHDOG_USEC = 600_000  # pings every 300 ms


class Listener:
    """The notification socket: collects every message, in order."""

    def __init__(self, path: pathlib.Path):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(str(path))
        self.sock.settimeout(0.2)
        self.messages: list[list[str]] = []

    def drain(self) -> None:
        while True:
            try:
                data = self.sock.recv(4096)
            except (socket.timeout, BlockingIOError):
                return
            self.messages.append(data.decode().splitlines())

    def next_state(self, start: int, proc, what: str) -> tuple[int, list[str]]:
        """The first message after index `start` that is not a watchdog ping."""
        def found():
            self.drain()
            for index in range(start, len(self.messages)):
                if self.messages[index] != ["WATCHDOG=1"]:
                    return index + 1, self.messages[index]
            return None
        return common.wait_for(what, found, proc=proc)


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="tern-notify-") as tmp:
        tmp = pathlib.Path(tmp)
        zones = tmp / "zones"
        zones.mkdir()
        zone = zones / "example.com.zone"
        zone.write_text(common.ZONE.format(serial=1, address="192.0.2.80"))
        port = common.free_port()
        config = tmp / "tern.yaml"
        good = (f"listen: ['127.0.0.1:{port}']\nzones: {{directory: {zones}}}\n"
                f"control-socket: {tmp / 'tern.sock'}\n")
        config.write_text(good)
        listener = Listener(tmp / "notify.sock")
        env = {"NOTIFY_SOCKET": str(tmp / "notify.sock"), "WATCHDOG_USEC": str(WATCHDOG_USEC)}
        with common.Tern(["--config", str(config)], tmp / "tern.log", env=env,
                         shell_prefix="WATCHDOG_PID=$$; export WATCHDOG_PID;") as tern:
            try:
                check(tern, listener, zone, config, good, port)
            except Failure as err:
                raise Failure(f"{err}\nmessages: {listener.messages}\n--- tern log:\n"
                              f"{tern.log_text()}") from None


def check(tern, listener, zone, config, good, port) -> None:
    proc = tern.proc
    at, first = listener.next_state(0, proc, "READY=1 after the start")
    if first != ["READY=1"] or at != 1:
        raise Failure(f"the first message is {listener.messages[:at]}, not READY=1")
    if common.answer(port, "www.example.com.") != ["192.0.2.80"]:
        raise Failure("READY=1 sent but www.example.com does not answer")

    # The watchdog: two pings after READY=1 (each every WATCHDOG_USEC / 2).
    def pings():
        listener.drain()
        return listener.messages[at:].count(["WATCHDOG=1"]) >= 2
    common.wait_for("two WATCHDOG=1 pings", pings, proc=proc)

    # A reload that changes the zone.
    zone.write_text(common.ZONE.format(serial=2, address="192.0.2.81"))
    tern.signal(signal.SIGHUP)
    at, state = listener.next_state(at, proc, "RELOADING=1 after SIGHUP")
    if state[0] != "RELOADING=1" or len(state) != 2 or not state[1].startswith("MONOTONIC_USEC="):
        raise Failure(f"after SIGHUP came {state}, not RELOADING=1 with MONOTONIC_USEC")
    usec = int(state[1].split("=", 1)[1])
    now = time.clock_gettime_ns(time.CLOCK_MONOTONIC) // 1000
    if not 0 < now - usec < 60_000_000:
        raise Failure(f"MONOTONIC_USEC={usec} is not the monotonic clock's time ({now})")
    at, state = listener.next_state(at, proc, "READY=1 after the reload")
    if state != ["READY=1"]:
        raise Failure(f"after RELOADING=1 came {state}, not READY=1")
    if common.answer(port, "www.example.com.") != ["192.0.2.81"]:
        raise Failure("READY=1 after the reload but the changed zone is not served")

    # A reload that is aborted (the configuration does not parse) still ends.
    config.write_text(good + "no-such-key: 1\n")
    tern.signal(signal.SIGHUP)
    at, state = listener.next_state(at, proc, "RELOADING=1 after the bad SIGHUP")
    if state[0] != "RELOADING=1":
        raise Failure(f"after the second SIGHUP came {state}, not RELOADING=1")
    at, state = listener.next_state(at, proc, "READY=1 after the aborted reload")
    if state != ["READY=1"]:
        raise Failure(f"after the aborted reload came {state}, not READY=1")
    if "reload aborted" not in tern.log_text():
        raise Failure("the bad configuration did not abort the reload")

    tern.signal(signal.SIGTERM)
    at, state = listener.next_state(at, proc, "STOPPING=1 after SIGTERM")
    if state != ["STOPPING=1"]:
        raise Failure(f"after SIGTERM came {state}, not STOPPING=1")
    code = tern.wait_exit()
    if code != 0:
        raise Failure(f"tern exited with {code} after SIGTERM")
    listener.drain()
    later = [m for m in listener.messages[at:] if m != ["WATCHDOG=1"]]
    if later:
        raise Failure(f"messages after STOPPING=1: {later}")


if __name__ == "__main__":
    common.run(SCRIPT, main)
