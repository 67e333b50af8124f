#!/usr/bin/env python3
"""DNS over TLS (RFC 7858, issue 26) against tern.

tern serves the differential test's generated zones on a plain listener (UDP and TCP)
and on a `tls.listen` listener, first with the self-signed certificate it makes in its
state directory, then (after `tern reload`) with PEM files made here by openssl. Short
TCP timeouts (initial 2 s, idle 3 s, message 500 ms) make the hostile clients' closing
quick. Checks:

1. Answers: the differential query set (tests/differential/queries.py) sent pipelined
   on one TCP and one TLS connection: every answer over TLS equals the one over TCP,
   octet for octet. `kdig +tls` and `dig +tls` give the same answers as `+tcp` for a
   sample of them.
2. The pin: `tern status` prints it; `kdig +tls-pin=` with it is answered, with another
   pin refused. It is the SHA-256 of the certificate's SubjectPublicKeyInfo (computed
   here with openssl).
3. `openssl s_client`: TLS 1.3 and TLS 1.2 negotiated, ALPN "dot" agreed, a client
   without ALPN served, one offering only "h2" refused; the certificate served is the
   self-signed one in the state directory; a TLS 1.3 and a TLS 1.2 session saved and
   used again are resumed, counted in `tern_tls_resumed_total`.
4. Padding: a TLS query with an EDNS Padding option gets an answer whose length is a
   multiple of 468 with a Padding option; the same over TCP gets none.
5. Reload: with a TLS connection open, new certificate files are configured and
   `tern reload` run: a new connection gets the new certificate (and `tern status` the
   new pin), the open connection still answers.
6. Hostile clients, while UDP queries keep being answered: connections that never send
   a ClientHello, one that trickles it, one that finishes the handshake and sends
   half a frame, one that stays silent after a query (the idle timeout), and one that
   half-closes after a query: each is closed by the server (seen as the end of its
   stream) and counted on the metrics endpoint
   (`tern_tls_handshakes_total{outcome="timeout"}`, `tern_tls_connections_timed_out_total`).
7. A client that sends queries and never reads its answers: closed by the write timeout
   once tern's write blocks, counted (`timeout="write"`); UDP answered meanwhile.
8. `dnsperf -m dot -c 4`: every query answered, none lost.

Every wait is for an event (an answer, the end of a stream, a counter reaching its
value) and bounded; tern and the temporary directory go on exit.
"""

from __future__ import annotations

import base64
import hashlib
import os
import pathlib
import re
import shutil
import signal
import socket
import ssl
import struct
import subprocess
import sys
import tempfile
import time
import urllib.request

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "differential"))

import dns.edns  # noqa: E402
import dns.exception  # noqa: E402
import dns.flags  # noqa: E402
import dns.message  # noqa: E402
import dns.query  # noqa: E402
import dns.rdatatype  # noqa: E402

import queries as qmod  # noqa: E402
import servers as smod  # noqa: E402
import zones as zmod  # noqa: E402

WAIT = 30.0  # seconds for any one event
TIMEOUT = 5.0  # seconds for one answer
PADDING_BLOCK = 468
HOSTILE_SILENT = 8  # connections that never send a ClientHello


class Failure(Exception):
    pass


def fail(message: str) -> None:
    raise Failure(message)


def log_tail(log: pathlib.Path) -> str:
    try:
        return "\n".join(log.read_text(errors="replace").splitlines()[-25:])
    except OSError:
        return "(no log)"


def wait_for(what: str, condition, timeout: float = WAIT) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.05)
    fail(f"timed out waiting for {what}")


def run(command: list[str], input: bytes | None = None, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run(command, input=input, capture_output=True, timeout=timeout)


#----------- tern -------------------------------------------------------------

class Tern:
    # Lines of tern.yaml a test's subclass may change: the cores, and the settings
    # under `tcp:`.
    CORES = ""
    TCP = "  initial-timeout: 2s\n  idle-timeout: 3s\n  message-timeout: 500ms\n"

    def __init__(self, tmp: pathlib.Path) -> None:
        self.tmp = tmp
        self.bin = pathlib.Path(os.environ.get("TERN_BIN", "target/release/tern")).resolve()
        self.ports = {"plain": smod.free_port(), "tls": smod.free_port(), "metrics": smod.free_port()}
        self.write_config(None)
        self.log = tmp / "tern.log"
        self.proc = subprocess.Popen([str(self.bin), "serve", "--config", str(tmp / "tern.yaml")],
                                     cwd=tmp, stdout=open(self.log, "ab"), stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL)
        wait_for("tern to serve", lambda: "info: serving " in self.log_text() or self.proc.poll() is not None)
        if self.proc.poll() is not None:
            fail(f"tern exited at start:\n{log_tail(self.log)}")

    def write_config(self, files: tuple[str, str] | None) -> None:
        certificate = f"  certificate: {files[0]}\n  key: {files[1]}\n" if files else ""
        (self.tmp / "tern.yaml").write_text(
            f"listen: ['127.0.0.1:{self.ports['plain']}']\n"
            f"{self.CORES}"
            "zones:\n  directory: zones\n"
            "control-socket: tern.sock\n"
            "state-directory: state\n"
            f"metrics:\n  listen: 127.0.0.1:{self.ports['metrics']}\n"
            f"tcp:\n{self.TCP}"
            f"tls:\n  listen: ['127.0.0.1:{self.ports['tls']}']\n{certificate}"
        )

    def log_text(self) -> str:
        return self.log.read_text(errors="replace")

    def control(self, *words: str) -> str:
        out = run([str(self.bin), *words, "--socket", str(self.tmp / "tern.sock")])
        if out.returncode != 0:
            fail(f"tern {' '.join(words)}: rc {out.returncode}: {out.stderr.decode()}")
        return out.stdout.decode()

    def pin(self) -> str:
        found = re.search(r"^tls pin-sha256 (\S+)$", self.control("status"), re.M)
        if not found:
            fail("tern status shows no pin")
        return found.group(1)

    def metrics(self) -> dict[str, float]:
        url = f"http://127.0.0.1:{self.ports['metrics']}/metrics"
        text = urllib.request.urlopen(url, timeout=TIMEOUT).read().decode()
        values = {}
        for line in text.splitlines():
            if line.startswith("tern_") and " " in line:
                name, value = line.rsplit(" ", 1)
                values[name] = float(value)
        return values

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


#----------- clients ----------------------------------------------------------

def tls_context(alpn: list[str] | None = ("dot",)) -> ssl.SSLContext:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    if alpn:
        context.set_alpn_protocols(list(alpn))
    return context


def tls_connect(port: int) -> ssl.SSLSocket:
    raw = socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT)
    return tls_context().wrap_socket(raw)


def recv_exactly(sock, count: int) -> bytes:
    data = b""
    while len(data) < count:
        chunk = sock.recv(count - len(data))
        if not chunk:
            fail(f"connection closed after {len(data)} of {count} octets")
        data += chunk
    return data


def exchange_pipelined(sock, wires: list[bytes]) -> dict[int, bytes]:
    """Sends every query at once, then reads as many answers; by message id."""
    sock.sendall(b"".join(struct.pack("!H", len(w)) + w for w in wires))
    answers = {}
    for _ in wires:
        size = struct.unpack("!H", recv_exactly(sock, 2))[0]
        answer = recv_exactly(sock, size)
        answers[struct.unpack("!H", answer[:2])[0]] = answer
    return answers


def exchange(sock, wire: bytes) -> bytes:
    return exchange_pipelined(sock, [wire]).popitem()[1]


def closed_by_server(sock, what: str) -> None:
    """Waits (bounded) for the server to end the stream: recv returns nothing or fails."""
    sock.settimeout(WAIT)
    try:
        while True:
            data = sock.recv(4096)
            if not data:
                return
    except (ConnectionResetError, ssl.SSLError, BrokenPipeError):
        return
    except socket.timeout:
        fail(f"{what}: the server did not close the connection within {WAIT} s")


def trickle_until_closed(sock: socket.socket, data: bytes) -> int:
    """Sends `data` an octet at a time, each after waiting up to 100 ms for the server
    to close the connection; returns the octets sent once it has (fails if all were)."""
    sock.settimeout(0.1)
    for sent, octet in enumerate(data):
        try:
            if sock.recv(1) == b"":
                return sent
        except socket.timeout:
            pass
        except OSError:
            return sent
        try:
            sock.sendall(bytes([octet]))
        except OSError:
            return sent
    fail("a trickled handshake record was never closed")
    return len(data)


def still_open(sock: socket.socket) -> bool:
    """Whether the server has not closed `sock` (nothing to read, no end of stream)."""
    sock.setblocking(False)
    try:
        return sock.recv(1) != b""
    except BlockingIOError:
        return True
    except OSError:
        return False
    finally:
        sock.settimeout(TIMEOUT)


def udp_answered(port: int, count: int) -> int:
    """Sends `count` UDP queries one after another; returns how many were answered."""
    answered = 0
    for i in range(count):
        query = dns.message.make_query("www.example.com.", "A")
        try:
            dns.query.udp(query, "127.0.0.1", port=port, timeout=TIMEOUT)
            answered += 1
        except dns.exception.Timeout:
            pass
    return answered


#----------- checks -----------------------------------------------------------

def check_answers(tern: Tern, infos) -> list:
    queries = qmod.generated_queries(infos, seed=26, tcp_every=1000)[:4000]
    wires = []
    for i, q in enumerate(queries):
        message = dns.message.make_query(q.qname, q.qtype, use_edns=0 if q.edns else False,
                                         want_dnssec=q.do, payload=q.payload)
        if not q.rd:
            message.flags &= ~dns.flags.RD
        message.id = i
        wires.append(message.to_wire())
    with socket.create_connection(("127.0.0.1", tern.ports["plain"]), timeout=TIMEOUT) as tcp:
        over_tcp = exchange_pipelined(tcp, wires)
    with tls_connect(tern.ports["tls"]) as tls:
        if tls.selected_alpn_protocol() != "dot":
            fail(f"ALPN: {tls.selected_alpn_protocol()!r}, expected 'dot'")
        over_tls = exchange_pipelined(tls, wires)
    if len(over_tcp) != len(wires) or len(over_tls) != len(wires):
        fail(f"answers: {len(over_tcp)} over TCP, {len(over_tls)} over TLS, of {len(wires)}")
    differ = [i for i in over_tcp if over_tcp[i] != over_tls[i]]
    if differ:
        q = queries[differ[0]]
        fail(f"{len(differ)} answers differ between TCP and TLS, first {q.describe()}")
    print(f"dot: {len(wires)} pipelined queries: every TLS answer equals TCP's")

    sample = [q for q in queries if q.edns][:: max(1, len(queries) // 40)][:20]
    for q in sample:
        for tool in ("kdig", "dig"):
            base = [tool, "@127.0.0.1", "-p", "", q.qname, q.qtype, "+short"]
            plain = base.copy()
            plain[3] = str(tern.ports["plain"])
            secure = base.copy()
            secure[3] = str(tern.ports["tls"])
            over_tcp = run(plain + ["+tcp"])
            over_tls = run(secure + ["+tls"])
            if over_tls.returncode != 0 or over_tls.stdout != over_tcp.stdout:
                fail(f"{tool} +tls {q.qname} {q.qtype}: {over_tls.stdout!r} "
                     f"(rc {over_tls.returncode}), over TCP {over_tcp.stdout!r}")
    print(f"dot: kdig +tls and dig +tls equal +tcp on {len(sample)} queries")
    return queries


def spki_pin(cert_pem: bytes) -> str:
    key = run(["openssl", "x509", "-pubkey", "-noout"], input=cert_pem).stdout
    der = run(["openssl", "pkey", "-pubin", "-outform", "DER"], input=key).stdout
    return base64.b64encode(hashlib.sha256(der).digest()).decode()


def served_certificate(port: int, extra: list[str] = (), sent: bytes = b"") -> tuple[bytes, str]:
    """The certificate openssl s_client is served (PEM) and its whole output; `sent` is
    written to the connection first."""
    out = run(["openssl", "s_client", "-connect", f"127.0.0.1:{port}", *extra], input=sent,
              timeout=WAIT)
    text = out.stdout.decode(errors="replace") + out.stderr.decode(errors="replace")
    found = re.search(rb"-----BEGIN CERTIFICATE-----.*?-----END CERTIFICATE-----\n", out.stdout, re.S)
    return (found.group(0) if found else b""), text


def check_pin(tern: Tern) -> None:
    pin = tern.pin()
    cert = (tern.tmp / "state/tls/self-signed.cert.pem").read_bytes()
    if spki_pin(cert) != pin:
        fail(f"tern status pin {pin} is not the certificate's SPKI pin {spki_pin(cert)}")
    if f"pin-sha256 {pin}" not in tern.log_text():
        fail("the pin is not logged at start")
    port = str(tern.ports["tls"])
    good = run(["kdig", "@127.0.0.1", "-p", port, f"+tls-pin={pin}", "www.example.com", "A", "+short"])
    if good.returncode != 0 or b"192.0.2.80" not in good.stdout:
        fail(f"kdig +tls-pin with the right pin: rc {good.returncode} {good.stdout!r} {good.stderr!r}")
    wrong = base64.b64encode(hashlib.sha256(b"not the key").digest()).decode()
    bad = run(["kdig", "@127.0.0.1", "-p", port, f"+tls-pin={wrong}", "www.example.com", "A", "+short"])
    if b"192.0.2.80" in bad.stdout:
        fail("kdig +tls-pin with a wrong pin got an answer")
    print("dot: tern status's pin is the SPKI pin; kdig +tls-pin accepted it, refused another")


def check_openssl(tern: Tern) -> None:
    port = tern.ports["tls"]
    _, text = served_certificate(port, ["-tls1_3", "-alpn", "dot"])
    if "TLSv1.3" not in text or "ALPN protocol: dot" not in text:
        fail(f"openssl -tls1_3 -alpn dot:\n{text[-1500:]}")
    _, text = served_certificate(port, ["-tls1_2", "-alpn", "dot"])
    if "TLSv1.2" not in text or "ALPN protocol: dot" not in text:
        fail(f"openssl -tls1_2 -alpn dot:\n{text[-1500:]}")
    cert, text = served_certificate(port)
    if "No ALPN negotiated" not in text or not cert:
        fail(f"openssl without ALPN not served:\n{text[-1500:]}")
    if cert != (tern.tmp / "state/tls/self-signed.cert.pem").read_bytes():
        fail("the certificate served is not the state directory's self-signed one")
    # Resumption: a TLS 1.3 ticket and a TLS 1.2 session, each used again.
    before = tern.metrics()["tern_tls_resumed_total"]
    for version in ("-tls1_3", "-tls1_2"):
        session = tern.tmp / f"session{version}"
        # A TLS 1.3 ticket comes after the handshake: s_client, told to read on after
        # its input ends (-ign_eof), sends one query and reads until tern closes the
        # connection (its idle timeout), so the ticket has been read when it writes the
        # session out; without that it may leave before the ticket arrives.
        wire = dns.message.make_query("www.example.com.", "A").to_wire()
        served_certificate(port, [version, "-ign_eof", "-sess_out", str(session)],
                           sent=len(wire).to_bytes(2, "big") + wire)
        if not session.exists():
            fail(f"openssl {version}: no session written")
        _, text = served_certificate(port, [version, "-sess_in", str(session)])
        if "Reused, TLSv1." not in text:
            fail(f"openssl {version}: the session was not resumed:\n{text[-1500:]}")
    resumed = tern.metrics()["tern_tls_resumed_total"] - before
    if resumed != 2:
        fail(f"tern_tls_resumed_total rose by {resumed}, expected 2")
    _, text = served_certificate(port, ["-alpn", "h2"])
    if "no application protocol" not in text:
        fail(f"openssl -alpn h2 was not refused:\n{text[-1500:]}")
    print("dot: openssl: TLS 1.3, TLS 1.2, ALPN dot, no ALPN served, h2 refused, the self-signed "
          "cert, sessions resumed (1.3 ticket, 1.2) and counted")


def check_padding(tern: Tern) -> None:
    query = dns.message.make_query("www.example.com.", "A", use_edns=0,
                                   options=[dns.edns.GenericOption(12, b"\0" * 20)])
    query.id = 4242
    with tls_connect(tern.ports["tls"]) as tls:
        padded = exchange(tls, query.to_wire())
    with socket.create_connection(("127.0.0.1", tern.ports["plain"]), timeout=TIMEOUT) as tcp:
        plain = exchange(tcp, query.to_wire())
    answer = dns.message.from_wire(padded)
    if len(padded) % PADDING_BLOCK != 0 or not any(o.otype == 12 for o in answer.options):
        fail(f"the TLS answer to a padded query is {len(padded)} octets, options {answer.options}")
    if any(o.otype == 12 for o in dns.message.from_wire(plain).options):
        fail("the TCP answer to a padded query is padded")
    unpadded = dns.message.make_query("www.example.com.", "A", use_edns=0)
    with tls_connect(tern.ports["tls"]) as tls:
        if any(o.otype == 12 for o in dns.message.from_wire(exchange(tls, unpadded.to_wire())).options):
            fail("the TLS answer to an unpadded query is padded")
    print(f"dot: padding: {len(padded)}-octet answer over TLS, none over TCP or unasked")


def make_certificate(tmp: pathlib.Path) -> tuple[str, str]:
    out = run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256",
               "-nodes", "-keyout", str(tmp / "key.pem"), "-out", str(tmp / "cert.pem"),
               "-days", "30", "-subj", "/CN=dot.example.test"])
    if out.returncode != 0:
        fail(f"openssl req: {out.stderr.decode()}")
    return "cert.pem", "key.pem"


def check_reload(tern: Tern) -> None:
    old_pin = tern.pin()
    held = tls_connect(tern.ports["tls"])
    query = dns.message.make_query("www.example.com.", "A")
    exchange(held, query.to_wire())
    files = make_certificate(tern.tmp)
    tern.write_config(files)
    reply = tern.control("reload")
    if "reloaded" not in reply:
        fail(f"tern reload: {reply}")
    new_cert = (tern.tmp / files[0]).read_bytes()
    served, _ = served_certificate(tern.ports["tls"])
    if served != new_cert:
        fail("after the reload, a new connection is not served the new certificate")
    if tern.pin() != spki_pin(new_cert) or tern.pin() == old_pin:
        fail("tern status does not show the new certificate's pin")
    answer = dns.message.from_wire(exchange(held, query.to_wire()))
    if not answer.answer:
        fail("the connection opened before the reload no longer answers")
    held.close()
    print("dot: reload: new connections get the new certificate and pin, an open one still answers")


def check_hostile(tern: Tern) -> None:
    before = tern.metrics()
    port = tern.ports["tls"]
    silent = [socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT) for _ in range(HOSTILE_SILENT)]
    # A handshake record trickled one octet at a time: never complete within the timeout.
    trickle = socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT)
    record = bytes.fromhex("1603010200") + b"\x01" * 512
    # Half a frame after a finished handshake: closed by the message timeout.
    half = tls_connect(port)
    half.sendall(struct.pack("!H", 40) + b"\x00" * 10)
    # A handshake finished, a query answered, then the client half-closes its side
    # without close_notify: answered, then closed.
    shut = tls_connect(port)
    exchange(shut, dns.message.make_query("www.example.com.", "A").to_wire())
    # A query answered, then silence: closed by the idle timeout (3 s), which only the
    # connection's own deadline can end (no message is in progress).
    idle = tls_connect(port)
    exchange(idle, dns.message.make_query("www.example.com.", "A").to_wire())

    def opened() -> bool:
        return tern.metrics()["tern_tls_connections_open"] >= HOSTILE_SILENT + 4
    wait_for("the hostile connections to be open", opened)
    # UDP is answered while they are open: the first answer comes before any of the
    # silent ones is closed (each is seen still open right after it), and every one of
    # 100 is answered.
    answered = udp_answered(tern.ports["plain"], 1)
    if not all(still_open(s) for s in silent):
        fail("the silent connections closed before the first UDP answer")
    answered += udp_answered(tern.ports["plain"], 99)
    if answered != 100:
        fail(f"UDP answered {answered} of 100 queries while hostile TLS clients were connected")
    shut.shutdown(socket.SHUT_WR)
    trickled = trickle_until_closed(trickle, record)
    for sock, what in [(half, "half a frame"), (idle, "the idle connection"),
                       (shut, "the half-closed connection")] + [(s, "a silent client") for s in silent]:
        closed_by_server(sock, what)
        sock.close()
    trickle.close()
    expected_timeouts = HOSTILE_SILENT + 1

    def counted() -> bool:
        now = tern.metrics()
        timeouts = sum(v - before.get(k, 0) for k, v in now.items()
                       if k.startswith('tern_tls_handshakes_total{outcome="timeout"'))
        message = (now['tern_tls_connections_timed_out_total{timeout="message"}']
                   - before['tern_tls_connections_timed_out_total{timeout="message"}'])
        idled = (now['tern_tls_connections_timed_out_total{timeout="idle"}']
                 - before['tern_tls_connections_timed_out_total{timeout="idle"}'])
        return (timeouts >= expected_timeouts and message >= 1 and idled >= 1
                and now["tern_tls_connections_open"] == 0)
    wait_for("the hostile connections to be counted and closed", counted)
    print(f"dot: hostile: {HOSTILE_SILENT} silent, 1 trickling ({trickled} octets), 1 half-frame, "
          f"1 idle, 1 half-closed: "
          f"closed and counted; 100 UDP answers meanwhile")


SLOW_READER_QUERIES = 400  # queries per batch sent by the client that never reads
SLOW_READER_BATCHES = 2000  # bound: 800,000 queries, far past any kernel's buffers


def check_slow_reader(tern: Tern) -> None:
    """A TLS client that sends queries and never reads its answers (a 4 KiB receive
    buffer): once the kernel's buffers are full, tern's write blocks, its in-flight limit
    stops the reading, and the write timeout (5 s by default) closes the connection,
    counted as `timeout="write"`; UDP is answered meanwhile."""
    before = tern.metrics()
    key = 'tern_tls_connections_timed_out_total{timeout="write"}'
    raw = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    raw.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    raw.settimeout(TIMEOUT)
    raw.connect(("127.0.0.1", tern.ports["tls"]))
    sock = tls_context().wrap_socket(raw)
    wire = dns.message.make_query("www.example.com.", "A").to_wire()
    batch = (struct.pack("!H", len(wire)) + wire) * SLOW_READER_QUERIES
    # Sends until a send waits two seconds: tern has stopped reading (its write is blocked
    # and its in-flight limit reached). What is checked is the counter below, the write
    # timeout's own event; the stall only ends the sending.
    sock.settimeout(2.0)
    batches = 0
    try:
        for batches in range(SLOW_READER_BATCHES):
            sock.sendall(batch)
        fail(f"{SLOW_READER_BATCHES * SLOW_READER_QUERIES} queries sent and tern still reading")
    except socket.timeout:
        pass
    except OSError:
        pass  # closed already: the counter says why
    wait_for("the write timeout to close the slow reader",
             lambda: tern.metrics()[key] - before[key] >= 1)
    if udp_answered(tern.ports["plain"], 20) != 20:
        fail("UDP went unanswered while a TLS client did not read")
    sock.close()
    print(f"dot: a TLS client that never reads ({batches * SLOW_READER_QUERIES} queries sent "
          "before tern stopped reading): closed by the write timeout, counted")


def check_dnsperf(tern: Tern) -> None:
    names = tern.tmp / "dnsperf.txt"
    names.write_text("".join(f"{n} A\n" for n in ("www.example.com", "ns.example.com",
                                                    "nothere.example.com", "example.net")) * 250)
    out = run(["dnsperf", "-s", "127.0.0.1", "-p", str(tern.ports["tls"]), "-m", "dot", "-c", "4",
               "-n", "10", "-d", str(names), "-t", "5"], timeout=120)
    text = out.stdout.decode(errors="replace")
    completed = re.search(r"Queries completed:\s+(\d+)", text)
    lost = re.search(r"Queries lost:\s+(\d+)", text)
    if out.returncode != 0 or not completed or not lost:
        fail(f"dnsperf -m dot: rc {out.returncode}\n{text}{out.stderr.decode()}")
    if int(completed.group(1)) != 10000 or int(lost.group(1)) != 0:
        fail(f"dnsperf -m dot: {completed.group(1)} completed, {lost.group(1)} lost of 10000")
    qps = re.search(r"Queries per second:\s+([\d.]+)", text)
    print(f"dot: dnsperf -m dot -c 4: 10000 queries answered, none lost ({qps.group(1)} q/s)")


def main() -> int:
    tmp = pathlib.Path(tempfile.mkdtemp(prefix="tern-dot-"))
    tern = None
    try:
        (tmp / "zones").mkdir()
        infos = zmod.write_zones(tmp / "zones", {})
        tern = Tern(tmp)
        checks = [
            lambda: check_answers(tern, infos),
            lambda: check_pin(tern),
            lambda: check_openssl(tern),
            lambda: check_padding(tern),
            lambda: check_reload(tern),
            lambda: check_hostile(tern),
            lambda: check_slow_reader(tern),
            lambda: check_dnsperf(tern),
        ]
        for check in checks:
            check()
        tern.stop()
        if tern.proc.returncode != 0:
            fail(f"tern exited with {tern.proc.returncode}:\n{log_tail(tern.log)}")
        print(f"dot: {len(checks)} passed, 0 failed")
        return 0
    except (Failure, OSError, dns.exception.DNSException, subprocess.TimeoutExpired) as err:
        print(f"dot: FAILED: {err}", file=sys.stderr)
        if tern is not None:
            print(f"--- tern log:\n{log_tail(tern.log)}", file=sys.stderr)
        return 1
    finally:
        if tern is not None:
            tern.stop()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
