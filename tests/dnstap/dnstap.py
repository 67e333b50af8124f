#!/usr/bin/env python3
"""tern's dnstap output, read by BIND's `dnstap-read` and farsight's `fstrm_capture`.

Three runs of tern on loopback, each with one zone and a forwarder whose upstream is a
tiny responder in this process (127.0.0.1):

1. `dnstap.file`: known queries over UDP (IPv4 and IPv6) and TCP, answered from the
   zone, and forwarded ones over UDP and TCP. tern is stopped (SIGTERM), then
   `dnstap-read -y` reads the file: every query appears as AUTH_QUERY and
   AUTH_RESPONSE (CLIENT_QUERY and CLIENT_RESPONSE when forwarded, with
   FORWARDER_QUERY/RESPONSE to the upstream) with the client's and tern's addresses
   and ports and the right protocol, identity and version.
2. `dnstap.socket`: `fstrm_capture` listens on a Unix socket and writes a file; tern
   connects with the bidirectional handshake; after tern and then fstrm_capture stop,
   `dnstap-read` finds the queries in that file.
3. A reader that makes the handshake and then never reads, with a tiny per-core
   buffer: a burst of queries is still answered at once, and the metrics endpoint
   counts dropped messages (`tern_dnstap_dropped_total{reason}`); tern still stops
   promptly. Then the reader reads everything the connection brought: it holds exactly
   as many whole data frames as tern's closing log line counts written, and that line
   counts at least one message lost (issue 22: the frames tern still held when the
   stalled connection timed out; they were counted written before).
4. A start that fails (the listen port is held by a socket without SO_REUSEPORT):
   tern exits with the bind error, and a reader listening on `dnstap.socket` was
   never connected to: the writer, started before the cores, gets its go only once
   they serve (issue 23: the binary, not tern-server, now starts and finishes it).

Every wait is for an event (a log line, a process's exit, a count) and bounded; the
processes and the temporary directory go on exit.
"""

from __future__ import annotations

import os
import pathlib
import re
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "differential"))

import dns.flags  # noqa: E402
import dns.message  # noqa: E402
import dns.query  # noqa: E402
import dns.rcode  # noqa: E402
import dns.rdatatype  # noqa: E402
import dns.rrset  # noqa: E402

import servers as smod  # noqa: E402  (tests/differential/servers.py)

SCRIPT = "dnstap/dnstap.py"
WAIT = 30.0  # seconds for any one event
STOP_WAIT = 10.0  # seconds tern may take to stop (it promises 2 s; the writer adds < 3 s)

ZONE = """$ORIGIN example.com.
$TTL 300
@ SOA ns1 hostmaster 7 3600 900 604800 300
@ NS ns1
ns1 A 127.0.0.1
* A 127.0.0.2
"""

CONTENT_TYPE = "protobuf:dnstap.Dnstap"


class Failure(Exception):
    pass


def fail(message: str) -> None:
    raise Failure(message)


def log_tail(log: pathlib.Path) -> str:
    try:
        return "\n".join(log.read_text(errors="replace").splitlines()[-20:])
    except OSError:
        return "(no log)"


def wait_for(what: str, condition, timeout: float = WAIT) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.05)
    fail(f"timed out waiting for {what}")


def free_tcp_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


#----------- The upstream ----------------------------------------------------

class Upstream:
    """A UDP responder on 127.0.0.1 that answers every query with one A record."""

    def __init__(self) -> None:
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.settimeout(0.2)
        self.port = self.sock.getsockname()[1]
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self) -> None:
        while not self.stopping.is_set():
            try:
                data, peer = self.sock.recvfrom(65535)
            except socket.timeout:
                continue
            except OSError:
                return
            try:
                query = dns.message.from_wire(data)
            except Exception:  # noqa: BLE001 - anything malformed is ignored
                continue
            reply = dns.message.make_response(query)
            reply.flags |= dns.flags.RA
            question = query.question[0]
            if question.rdtype == dns.rdatatype.A:
                reply.answer.append(dns.rrset.from_text(question.name, 60, "IN", "A", "192.0.2.1"))
            self.sock.sendto(reply.to_wire(), peer)

    def close(self) -> None:
        self.stopping.set()
        self.thread.join(timeout=5)
        self.sock.close()


#----------- tern ------------------------------------------------------------

class Tern:
    def __init__(self, tmp: pathlib.Path, name: str, dnstap: str, upstream: int,
                 metrics_port: int | None = None) -> None:
        self.dir = tmp / name
        (self.dir / "zones").mkdir(parents=True)
        (self.dir / "zones" / "example.com.zone").write_text(ZONE)
        self.port = smod.free_port()
        config = (
            f"listen: ['127.0.0.1:{self.port}', '[::1]:{self.port}']\n"
            "zones:\n  directory: zones\n"
            "control-socket: tern.sock\n"
            "forward:\n  allow: [127.0.0.0/8, '::1']\n"
            f"  upstreams: ['127.0.0.1:{upstream}']\n"
            + dnstap
        )
        if metrics_port is not None:
            config += f"metrics:\n  listen: 127.0.0.1:{metrics_port}\n"
        (self.dir / "tern.yaml").write_text(config)
        self.log = self.dir / "tern.log"
        tern_bin = pathlib.Path(os.environ.get("TERN_BIN", "target/release/tern")).resolve()
        self.proc = subprocess.Popen(
            [str(tern_bin), "serve", "--config", str(self.dir / "tern.yaml")],
            cwd=self.dir, stdout=subprocess.DEVNULL, stderr=open(self.log, "wb"),
        )
        try:
            wait_for("tern to serve", lambda: self.logged(" info: serving ") or self.exited())
        except Failure:
            self.kill()
            raise
        if self.exited():
            fail(f"tern exited at start:\n{log_tail(self.log)}")

    def logged(self, text: str) -> bool:
        return text in self.log.read_text(errors="replace")

    def exited(self) -> bool:
        return self.proc.poll() is not None

    def stop(self) -> float:
        """SIGTERM, and how long tern took to exit."""
        started = time.monotonic()
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=STOP_WAIT)
        except subprocess.TimeoutExpired:
            fail(f"tern did not stop within {STOP_WAIT} s:\n{log_tail(self.log)}")
        if self.proc.returncode != 0:
            fail(f"tern exited with {self.proc.returncode}:\n{log_tail(self.log)}")
        # Not by the 1.5 s deadline's exit: the cores and the writer ended.
        if self.logged("exiting without waiting"):
            fail(f"tern stopped by its deadline, not by finishing:\n{log_tail(self.log)}")
        return time.monotonic() - started

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


#----------- Queries ---------------------------------------------------------

def ask(name: str, transport: str, where: str, port: int) -> tuple[dns.message.Message, int]:
    """Asks `name` A from a socket of our own; returns the answer and our port."""
    query = dns.message.make_query(name, "A", use_edns=False)
    family = socket.AF_INET6 if ":" in where else socket.AF_INET
    kind = socket.SOCK_STREAM if transport == "tcp" else socket.SOCK_DGRAM
    with socket.socket(family, kind) as sock:
        sock.bind((where, 0))
        our_port = sock.getsockname()[1]
        sock.settimeout(5)
        if transport == "tcp":
            sock.connect((where, port))
            reply = dns.query.tcp(query, where, port=port, timeout=5, sock=sock)
        else:
            reply = dns.query.udp(query, where, port=port, timeout=5, sock=sock)
    if reply.rcode() != dns.rcode.NOERROR or not reply.answer:
        fail(f"{name} over {transport}: {dns.rcode.to_text(reply.rcode())}, {reply.answer}")
    return reply, our_port


#----------- dnstap-read -----------------------------------------------------

def read_dnstap(path: pathlib.Path) -> list[dict[str, str]]:
    """`dnstap-read -y`'s documents as flat dicts: the top keys, the message's keys
    (prefixed "message."), and "qname": the question of its DNS message."""
    out = subprocess.run(["dnstap-read", "-y", str(path)], capture_output=True, text=True,
                         timeout=60)
    if out.returncode != 0:
        fail(f"dnstap-read -y {path}: rc {out.returncode}\n{out.stderr}")
    messages = []
    for document in out.stdout.split("\n---"):
        entry: dict[str, str] = {}
        in_question = False
        for line in document.splitlines():
            stripped = line.strip()
            if stripped.startswith(";; QUESTION SECTION"):
                in_question = True
                continue
            if in_question and stripped.startswith(";") and "qname" not in entry:
                entry["qname"] = stripped[1:].split()[0].lower()
                in_question = False
                continue
            if line.startswith("  ") and not line.startswith("    ") and ": " in line:
                key, _, value = stripped.partition(": ")
                entry["message." + key] = value.strip().strip('"')
            elif not line.startswith(" ") and ": " in line:
                key, _, value = line.partition(": ")
                entry[key] = value.strip().strip('"')
        if entry:
            messages.append(entry)
    if not messages:
        fail(f"dnstap-read found no message in {path}\n{out.stdout[:2000]}")
    return messages


def find(messages, kind: str, qname: str) -> list[dict[str, str]]:
    return [m for m in messages if m.get("message.type") == kind and m.get("qname") == qname]


def expect_exchange(messages, qname: str, kinds: tuple[str, str], protocol: str,
                    client: tuple[str, int], server: tuple[str, int]) -> None:
    family = "INET6" if ":" in client[0] else "INET"
    for kind in kinds:
        found = find(messages, kind, qname)
        if len(found) != 1:
            fail(f"{qname}: {len(found)} {kind} messages, expected 1")
        m = found[0]
        wanted = {
            "message.socket_family": family,
            "message.socket_protocol": protocol,
            "message.query_address": client[0],
            "message.query_port": str(client[1]),
            "message.response_address": server[0],
            "message.response_port": str(server[1]),
        }
        for key, value in wanted.items():
            if m.get(key) != value:
                fail(f"{qname} {kind}: {key} is {m.get(key)!r}, expected {value!r}\n{m}")


#----------- The runs --------------------------------------------------------

def file_run(tmp: pathlib.Path, upstream: Upstream) -> str:
    tern = Tern(tmp, "file", "dnstap:\n  file: tap.fstrm\n  identity: ns1.test\n",
                upstream.port)
    try:
        exchanges = []
        for name, transport, where in (
            ("udp4.example.com.", "udp", "127.0.0.1"),
            ("udp6.example.com.", "udp", "::1"),
            ("tcp4.example.com.", "tcp", "127.0.0.1"),
            ("tcp6.example.com.", "tcp", "::1"),
        ):
            _, port = ask(name, transport, where, tern.port)
            exchanges.append((name, transport, (where, port), (where, tern.port)))
        forwarded = []
        for name, transport in (("fwd-udp.example.org.", "udp"), ("fwd-tcp.example.org.", "tcp")):
            _, port = ask(name, transport, "127.0.0.1", tern.port)
            forwarded.append((name, transport, ("127.0.0.1", port), ("127.0.0.1", tern.port)))
        took = tern.stop()
    finally:
        tern.kill()
    raw = (tern.dir / "tap.fstrm").read_bytes()
    start = struct.pack(">III", 0, 34, 2) + struct.pack(">II", 1, 22) + CONTENT_TYPE.encode()
    if not raw.startswith(start) or not raw.endswith(struct.pack(">III", 0, 4, 3)):
        fail(f"the file does not start with START and end with STOP: {raw[:40]!r}...{raw[-12:]!r}")
    messages = read_dnstap(tern.dir / "tap.fstrm")
    for name, transport, client, server in exchanges:
        expect_exchange(messages, name, ("AUTH_QUERY", "AUTH_RESPONSE"), transport.upper(),
                        client, server)
    for name, transport, client, server in forwarded:
        expect_exchange(messages, name, ("CLIENT_QUERY", "CLIENT_RESPONSE"), transport.upper(),
                        client, server)
        for kind in ("FORWARDER_QUERY", "FORWARDER_RESPONSE"):
            found = find(messages, kind, name)
            if not found:
                fail(f"{name}: no {kind}")
            for m in found:
                if (m.get("message.response_address"), m.get("message.response_port")) != (
                        "127.0.0.1", str(upstream.port)):
                    fail(f"{name} {kind}: not to the upstream\n{m}")
                if m.get("message.socket_protocol") != "UDP":
                    fail(f"{name} {kind}: {m.get('message.socket_protocol')}, expected UDP")
    for m in messages:
        if m.get("identity") != "ns1.test" or not m.get("version", "").startswith("tern "):
            fail(f"identity/version: {m.get('identity')!r} {m.get('version')!r}")
        if m.get("type") != "MESSAGE":
            fail(f"type {m.get('type')!r}")
    # Nothing else was asked: 4 exchanges of 2 messages, 2 forwarded of at least 4.
    if len(messages) < 16:
        fail(f"{len(messages)} messages, expected at least 16")
    return f"file: {len(messages)} messages read back, tern stopped in {took:.2f} s"


def socket_run(tmp: pathlib.Path, upstream: Upstream) -> str:
    where = tmp / "capture"
    where.mkdir()
    sock_path = where / "dnstap.sock"
    out_path = where / "capture.fstrm"
    capture_log = where / "fstrm_capture.log"
    capture = subprocess.Popen(
        ["fstrm_capture", "-t", CONTENT_TYPE, "-u", str(sock_path), "-w", str(out_path)],
        stdout=subprocess.DEVNULL, stderr=open(capture_log, "wb"),
    )
    tern = None
    try:
        wait_for("fstrm_capture's socket", sock_path.exists)
        tern = Tern(tmp, "socket", f"dnstap:\n  socket: {sock_path}\n", upstream.port)
        wait_for("tern to connect to fstrm_capture", lambda: tern.logged("dnstap: connected"))
        names = [f"s{i}.example.com." for i in range(5)]
        clients = {}
        for name in names:
            _, port = ask(name, "udp", "127.0.0.1", tern.port)
            clients[name] = port
        tern.stop()
        # tern wrote STOP; fstrm_capture ends its file when told to stop.
        capture.send_signal(signal.SIGINT)
        try:
            capture.wait(timeout=WAIT)
        except subprocess.TimeoutExpired:
            fail(f"fstrm_capture did not stop:\n{log_tail(capture_log)}")
    finally:
        if tern is not None:
            tern.kill()
        if capture.poll() is None:
            capture.kill()
            capture.wait()
    messages = read_dnstap(out_path)
    for name, port in clients.items():
        expect_exchange(messages, name, ("AUTH_QUERY", "AUTH_RESPONSE"), "UDP",
                        ("127.0.0.1", port), ("127.0.0.1", tern.port))
    return f"socket: fstrm_capture took {len(messages)} messages"


def control(kind: int, content_type: bool) -> bytes:
    payload = struct.pack(">I", kind)
    if content_type:
        payload += struct.pack(">II", 1, len(CONTENT_TYPE)) + CONTENT_TYPE.encode()
    return struct.pack(">II", 0, len(payload)) + payload


def read_control(conn: socket.socket) -> int:
    head = b""
    while len(head) < 8:
        chunk = conn.recv(8 - len(head))
        if not chunk:
            fail("the writer closed during the handshake")
        head += chunk
    escape, length = struct.unpack(">II", head)
    if escape != 0 or not 4 <= length <= 512:
        fail(f"bad control frame header {head!r}")
    body = b""
    while len(body) < length:
        chunk = conn.recv(length - len(body))
        if not chunk:
            fail("the writer closed during the handshake")
        body += chunk
    return struct.unpack(">I", body[:4])[0]


def stalled_run(tmp: pathlib.Path, upstream: Upstream) -> str:
    """A reader that accepts the stream and never reads it: answers go on, messages
    are dropped and counted, and tern still stops promptly."""
    sock_path = tmp / "stalled.sock"
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(sock_path))
    listener.listen(8)
    listener.settimeout(WAIT)
    held: list[socket.socket] = []
    metrics_port = free_tcp_port()
    tern = Tern(tmp, "stalled", f"dnstap:\n  socket: {sock_path}\n  buffer: 16\n",
                upstream.port, metrics_port)
    try:
        conn, _ = listener.accept()
        held.append(conn)
        conn.settimeout(WAIT)
        if read_control(conn) != 4:  # READY
            fail("the writer did not start with READY")
        conn.sendall(control(1, True))  # ACCEPT
        if read_control(conn) != 2:  # START
            fail("the writer did not send START after ACCEPT")
        # From here on nothing is read.  A burst of queries, each answered in time.
        query = dns.message.make_query("burst.example.com.", "A", use_edns=False)
        count = 3000
        started = time.monotonic()
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
            sock.settimeout(2)
            for _ in range(count):
                sock.sendto(query.to_wire(), ("127.0.0.1", tern.port))
                data, _ = sock.recvfrom(65535)
                if dns.message.from_wire(data).rcode() != dns.rcode.NOERROR:
                    fail("a burst query was not answered with NOERROR")
        took = time.monotonic() - started
        endpoint = f"http://127.0.0.1:{metrics_port}/metrics"

        def dropped() -> float:
            total = 0.0
            with urllib.request.urlopen(endpoint, timeout=5) as reply:
                for line in reply.read().decode().splitlines():
                    if line.startswith("tern_dnstap_dropped_total{reason="):
                        total += float(line.split()[1])
            return total

        wait_for("tern to count dropped dnstap messages", lambda: dropped() > 0)
        count_dropped = dropped()
        stop_took = tern.stop()
        # Everything the stalled connection brought, now that tern has closed it.
        received = whole_frames(conn)
        closing = re.search(r"dnstap: closed: (\d+) messages written, (\d+) not written "
                            r"\(no reader\), (\d+) lost", tern.log.read_text(errors="replace"))
        if closing is None:
            fail(f"tern did not log its dnstap totals at the stop:\n{log_tail(tern.log)}")
        written, _, lost = (int(group) for group in closing.groups())
        if written != received:
            fail(f"tern counted {written} dnstap messages written, the reader received "
                 f"{received} whole frames")
        if lost < 1:
            fail(f"the stalled connection timed out with frames in tern's buffer, yet none "
                 f"was counted lost:\n{closing.group(0)}")
    finally:
        tern.kill()
        for conn in held:
            conn.close()
        listener.close()
    return (f"stalled reader: {count} queries answered in {took:.2f} s, "
            f"{count_dropped:.0f} messages dropped and counted, tern stopped in {stop_took:.2f} s; "
            f"the reader then got {received} whole frames, as many as counted written, and "
            f"{lost} were counted lost")


def failed_start_run(tmp: pathlib.Path, upstream: Upstream) -> str:
    """A start that fails never connects the writer to its socket."""
    where = tmp / "failed"
    (where / "zones").mkdir(parents=True)
    (where / "zones" / "example.com.zone").write_text(ZONE)
    sock_path = where / "dnstap.sock"
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(sock_path))
    listener.listen(8)
    # Held without SO_REUSEPORT: the cores' bind fails.
    taken = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    taken.bind(("127.0.0.1", 0))
    port = taken.getsockname()[1]
    (where / "tern.yaml").write_text(
        f"listen: ['127.0.0.1:{port}']\n"
        "zones:\n  directory: zones\n"
        "control-socket: tern.sock\n"
        f"dnstap:\n  socket: {sock_path}\n"
    )
    log = where / "tern.log"
    tern_bin = pathlib.Path(os.environ.get("TERN_BIN", "target/release/tern")).resolve()
    try:
        with open(log, "wb") as stderr:
            proc = subprocess.run(
                [str(tern_bin), "serve", "--config", str(where / "tern.yaml")],
                cwd=where, stdout=subprocess.DEVNULL, stderr=stderr, timeout=WAIT,
            )
        text = log.read_text(errors="replace")
        if proc.returncode == 0 or "starting the server" not in text:
            fail(f"tern did not fail its start (exit {proc.returncode}):\n{log_tail(log)}")
        # tern has exited: any connection it made is in the listener's queue.
        listener.setblocking(False)
        try:
            conn, _ = listener.accept()
        except BlockingIOError:
            pass
        else:
            conn.close()
            fail(f"the dnstap writer connected although the start failed:\n{log_tail(log)}")
        if "dnstap: connected" in text:
            fail(f"tern logged a dnstap connection at a failed start:\n{log_tail(log)}")
    finally:
        taken.close()
        listener.close()
    return "failed start: tern exited with the bind error, its writer never connected"


def whole_frames(conn: socket.socket) -> int:
    """Reads `conn` to its end: how many whole data frames came (a control frame, or
    one cut short, ends the count)."""
    data = bytearray()
    conn.settimeout(WAIT)
    while True:
        chunk = conn.recv(1 << 16)
        if not chunk:
            break
        data += chunk
    count = at = 0
    while at + 4 <= len(data):
        (length,) = struct.unpack(">I", data[at:at + 4])
        if length == 0 or at + 4 + length > len(data):
            break
        at += 4 + length
        count += 1
    return count


def main() -> None:
    tmp = pathlib.Path(tempfile.mkdtemp(prefix="tern-dnstap-"))
    upstream = Upstream()
    try:
        results = [run(tmp, upstream) for run in (file_run, socket_run, stalled_run,
                                                failed_start_run)]
    except Failure as err:
        print(f"{SCRIPT}: FAIL: {err}", file=sys.stderr)
        for log in sorted(tmp.glob("*/tern.log")):
            print(f"--- {log.relative_to(tmp)} ---\n{log_tail(log)}", file=sys.stderr)
        sys.exit(1)
    finally:
        upstream.close()
        shutil.rmtree(tmp, ignore_errors=True)
    for result in results:
        print(f"{SCRIPT}: OK: {result}")


if __name__ == "__main__":
    main()
