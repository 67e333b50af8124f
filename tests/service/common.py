"""Shared by the service tests: the tern binary, a free loopback port, starting
tern and stopping it whatever happens, asking it one question with dnspython,
and waiting for an event in a bounded loop (never a fixed sleep)."""

from __future__ import annotations

import os
import pathlib
import signal
import subprocess
import sys
import time

HERE = pathlib.Path(__file__).resolve().parent
REPO = HERE.parent.parent
sys.path.insert(0, str(REPO / "tests" / "differential"))

import dns.exception  # noqa: E402
import dns.flags  # noqa: E402
import dns.message  # noqa: E402
import dns.query  # noqa: E402
import dns.rcode  # noqa: E402

from servers import free_port  # noqa: E402,F401  (tests/differential/servers.py)

# The zone the service tests serve: a serial and www's address to fill in.
ZONE = """$ORIGIN example.com.
$TTL 300
@    IN SOA ns1 hostmaster {serial} 7200 3600 1209600 300
     IN NS  ns1
ns1  IN A   192.0.2.1
www  IN A   {address}
"""


# How long a start, a reload or a stop may take before the test fails.
START_TIMEOUT = 30.0
EVENT_TIMEOUT = 15.0


class Failure(Exception):
    pass


def tern_binary() -> pathlib.Path:
    path = pathlib.Path(os.environ.get("TERN_BIN", REPO / "target" / "release" / "tern"))
    if not path.is_file():
        raise Failure(f"no tern binary at {path} (make release, or set TERN_BIN)")
    return path.resolve()


def wait_for(what: str, check, timeout: float = EVENT_TIMEOUT, proc=None):
    """Calls `check` until it returns something true, then returns that; fails
    after `timeout` seconds, or at once if `proc` has exited."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        result = check()
        if result:
            return result
        if proc is not None and proc.poll() is not None:
            raise Failure(f"{what}: tern exited with {proc.returncode}")
        time.sleep(0.05)
    raise Failure(f"{what}: not within {timeout:.0f}s")


def answer(port: int, qname: str, rtype: str = "A"):
    """The answer records (as text) of a UDP query to 127.0.0.1:port, if the
    reply is an authoritative NOERROR; None otherwise (no reply included)."""
    query = dns.message.make_query(qname, rtype)
    query.flags &= ~dns.flags.RD
    try:
        reply = dns.query.udp(query, "127.0.0.1", port=port, timeout=0.5)
    except (dns.exception.Timeout, OSError):
        return None
    if reply.rcode() != dns.rcode.NOERROR or not reply.flags & dns.flags.AA:
        return None
    return sorted(rdata.to_text() for rrset in reply.answer for rdata in rrset)


class Tern:
    """`tern serve` as a child process, its output in a log file; stopped (and
    killed if it must be) by `stop`, which `with` calls on the way out."""

    def __init__(self, args: list[str], log: pathlib.Path, env: dict | None = None,
                 binary: pathlib.Path | None = None, shell_prefix: str | None = None):
        self.log_path = log
        command = [str(binary or tern_binary()), "serve", *args]
        if shell_prefix is not None:
            # e.g. `export WATCHDOG_PID=$$;` before exec: the shell's pid is tern's.
            command = ["sh", "-c", shell_prefix + ' exec "$@"', "sh", *command]
        self.log = open(log, "wb")
        self.proc = subprocess.Popen(command, stdout=self.log, stderr=subprocess.STDOUT,
                                     env={**os.environ, **(env or {})})

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()

    def log_text(self) -> str:
        self.log.flush()
        return self.log_path.read_text(errors="replace")

    def signal(self, number: int) -> None:
        self.proc.send_signal(number)

    def wait_exit(self, timeout: float = EVENT_TIMEOUT) -> int:
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            raise Failure(f"tern did not exit within {timeout:.0f}s") from None

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=EVENT_TIMEOUT)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()


def run(script: str, body) -> None:
    """Runs `body()`; prints PASS, or FAIL with the message, and exits 1."""
    try:
        body()
    except Failure as err:
        print(f"service/{script}: FAIL: {err}")
        sys.exit(1)
    print(f"service/{script}: PASS")
