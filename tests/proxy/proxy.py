#!/usr/bin/env python3
"""The PROXY protocol v2 (issue 26): dnsdist in front of tern, and raw headers.

tern serves example.com. on a plain listener and on a `proxy.listen` listener that
accepts PROXY v2 headers from 127.0.0.1 only (`proxy.allow`), with `forward.allow`
[127.0.0.2/32] (to an upstream responder in this process), `transfer.allow`
[127.0.0.3/32], response rate limiting (1 answer a second per /32, every limited
answer slipped as TC=1), dnstap to a file and the metrics endpoint. dnsdist
(`newServer{..., useProxyProtocol=true}`) listens on 127.0.0.1 and sends everything to
the proxied listener, so tern sees every query come from dnsdist's 127.0.0.1 and only
the header says who asked. Clients bind distinct loopback addresses:

1. forward.allow: a recursive query for a name outside our zones from 127.0.0.2
   through dnsdist (UDP and TCP) is forwarded (the upstream's answer comes back);
   from 127.0.0.4 it is REFUSED.
2. transfer.allow: AXFR through dnsdist over TCP from 127.0.0.3 is the whole zone,
   and tern logs "outgoing, to 127.0.0.3"; from 127.0.0.2 it is REFUSED.
3. RRL: a burst from 127.0.0.5 through dnsdist gets TC=1 slips; the first query of
   127.0.0.6 right after is answered in full (its own account, not dnsdist's).
4. dnstap (read by `dnstap-read` after tern stops): the queries of 1 and 3 were
   logged with the clients' addresses, and none of them with dnsdist's.
5. Raw datagrams built here, sent to the proxied listener from 127.0.0.1: a valid
   header naming 192.0.2.77 and a LOCAL header are answered to our socket without a
   header; no header, a cut one, a wrong version, an unknown command, an unknown
   family, a TLV running past the header, a header longer than the 1024-octet limit,
   a version 1 text header and an AF_UNIX one are dropped; from 127.0.0.9 (outside
   proxy.allow) a valid one is dropped, and so is a TCP connection. Each is counted
   by reason on the metrics endpoint (`tern_proxy_refused_total{reason}`), and the
   accepted ones in `tern_proxy_accepted_total`.

Every wait is for an event (an answer, a log line, a counter reaching its value) and
bounded; dnsdist, tern and the temporary directory go on exit.
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

import dns.exception  # noqa: E402
import dns.flags  # noqa: E402
import dns.message  # noqa: E402
import dns.query  # noqa: E402
import dns.rcode  # noqa: E402
import dns.rdatatype  # noqa: E402
import dns.rrset  # noqa: E402

import servers as smod  # noqa: E402  (tests/differential/servers.py: free_port)

WAIT = 30.0  # seconds for any one event
TIMEOUT = 5.0  # seconds for one answer

ZONE = """$ORIGIN example.com.
$TTL 300
@ SOA ns1 hostmaster 7 3600 900 604800 300
@ NS ns1
ns1 A 192.0.2.1
www A 192.0.2.80
"""

SIGNATURE = b"\r\n\r\n\x00\r\nQUIT\n"
FORWARDED = "elsewhere.example.net."


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


#----------- The upstream ----------------------------------------------------

class Upstream:
    """A UDP responder on 127.0.0.1 answering every query with one A record."""

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
                data, peer = self.sock.recvfrom(4096)
            except socket.timeout:
                continue
            except OSError:
                return
            try:
                query = dns.message.from_wire(data)
            except Exception:
                continue
            reply = dns.message.make_response(query)
            reply.flags |= dns.flags.RA
            question = query.question[0]
            reply.answer.append(dns.rrset.from_text(question.name, 60, "IN", "A",
                                                    "198.51.100.42"))
            self.sock.sendto(reply.to_wire(), peer)

    def close(self) -> None:
        self.stopping.set()
        self.thread.join(timeout=5)
        self.sock.close()


#----------- tern and dnsdist ------------------------------------------------

class Process:
    def __init__(self, name: str, command: list[str], cwd: pathlib.Path) -> None:
        self.name = name
        self.log = cwd / f"{name}.log"
        self.proc = subprocess.Popen(command, cwd=cwd, stdout=open(self.log, "ab"),
                                     stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)

    def logged(self, text: str) -> bool:
        return text in self.log.read_text(errors="replace")

    def exited(self) -> bool:
        return self.proc.poll() is not None

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def start_tern(tmp: pathlib.Path, upstream: int) -> tuple[Process, dict]:
    (tmp / "zones").mkdir()
    (tmp / "zones" / "example.com.zone").write_text(ZONE)
    ports = {"plain": smod.free_port(), "proxied": smod.free_port(),
             "metrics": smod.free_port()}
    config = (
        f"listen: ['127.0.0.1:{ports['plain']}']\n"
        "zones:\n  directory: zones\n"
        "control-socket: tern.sock\n"
        "proxy:\n  allow: [127.0.0.1/32]\n"
        f"  listen: ['127.0.0.1:{ports['proxied']}']\n"
        "forward:\n  allow: [127.0.0.2/32]\n"
        f"  upstreams: ['127.0.0.1:{upstream}']\n"
        "transfer:\n  allow: [127.0.0.3/32]\n"
        "rate-limit:\n  responses-per-second: 1\n  slip: 1\n  window: 1s\n"
        "  ipv4-prefix-length: 32\n"
        "dnstap:\n  file: tap.fstrm\n"
        f"metrics:\n  listen: 127.0.0.1:{ports['metrics']}\n"
    )
    (tmp / "tern.yaml").write_text(config)
    tern_bin = pathlib.Path(os.environ.get("TERN_BIN", "target/release/tern")).resolve()
    tern = Process("tern", [str(tern_bin), "serve", "--config", str(tmp / "tern.yaml")], tmp)
    wait_for("tern to serve", lambda: tern.logged(" info: serving ") or tern.exited())
    if tern.exited():
        fail(f"tern exited at start:\n{log_tail(tern.log)}")
    return tern, ports


def start_dnsdist(tmp: pathlib.Path, backend: int) -> tuple[Process, int]:
    port = smod.free_port()
    (tmp / "dnsdist.conf").write_text(
        f'setLocal("127.0.0.1:{port}")\n'
        'setACL({"127.0.0.0/8"})\n'
        'setSecurityPollSuffix("")\n'
        f'newServer({{address="127.0.0.1:{backend}", useProxyProtocol=true, '
        'checkName="example.com.", checkType="SOA", mustResolve=true})\n'
    )
    dnsdist = Process("dnsdist", ["dnsdist", "--supervised", "--disable-syslog",
                                  "-C", str(tmp / "dnsdist.conf")], tmp)
    query = dns.message.make_query("www.example.com.", "A")

    def answers() -> bool:
        if dnsdist.exited():
            fail(f"dnsdist exited:\n{log_tail(dnsdist.log)}")
        try:
            reply = dns.query.udp(query, "127.0.0.1", port=port, timeout=0.5)
        except Exception:
            return False
        return reply.rcode() == dns.rcode.NOERROR and bool(reply.answer)
    wait_for("dnsdist to answer through tern", answers)
    return dnsdist, port


#----------- Queries ---------------------------------------------------------

def ask(query: dns.message.Message, source: str, port: int, tcp: bool = False):
    """Sends `query` to 127.0.0.1:`port` from a socket bound to `source`."""
    kind = socket.SOCK_STREAM if tcp else socket.SOCK_DGRAM
    with socket.socket(socket.AF_INET, kind) as sock:
        sock.bind((source, 0))
        sock.settimeout(TIMEOUT)
        if tcp:
            sock.connect(("127.0.0.1", port))
            return dns.query.tcp(query, "127.0.0.1", port=port, timeout=TIMEOUT, sock=sock)
        return dns.query.udp(query, "127.0.0.1", port=port, timeout=TIMEOUT, sock=sock)


def axfr(source: str, port: int) -> tuple[int, int]:
    """(rcode of the first message, records received) of an AXFR of example.com."""
    query = dns.message.make_query("example.com.", "AXFR")
    query.flags &= ~dns.flags.RD
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((source, 0))
        sock.settimeout(TIMEOUT)
        sock.connect(("127.0.0.1", port))
        wire = query.to_wire()
        sock.sendall(struct.pack("!H", len(wire)) + wire)
        records, soas, rcode = 0, 0, None
        while soas < 2:
            length = struct.unpack("!H", recv_exactly(sock, 2))[0]
            message = dns.message.from_wire(recv_exactly(sock, length), one_rr_per_rrset=True)
            if rcode is None:
                rcode = message.rcode()
            if message.rcode() != dns.rcode.NOERROR:
                break
            for rrset in message.answer:
                records += len(rrset)
                if rrset.rdtype == dns.rdatatype.SOA:
                    soas += 1
        return rcode, records


def recv_exactly(sock: socket.socket, count: int) -> bytes:
    data = b""
    while len(data) < count:
        chunk = sock.recv(count - len(data))
        if not chunk:
            fail("connection closed in the middle of a message")
        data += chunk
    return data


def header(client: bytes = bytes([192, 0, 2, 77]), command: int = 1, family: int = 0x12,
           addresses: bytes | None = None, tlvs: bytes = b"", version: int = 2) -> bytes:
    """A PROXY v2 header; by default UDP over IPv4 from `client`:12345 to 127.0.0.1:53."""
    if addresses is None:
        addresses = client + bytes([127, 0, 0, 1]) + struct.pack("!HH", 12345, 53)
    body = addresses + tlvs
    return (SIGNATURE + bytes([version << 4 | command, family]) + struct.pack("!H", len(body))
            + body)


#----------- Metrics ---------------------------------------------------------

def metrics(port: int) -> dict[str, float]:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as reply:
        text = reply.read().decode()
    values = {}
    for line in text.splitlines():
        if line.startswith("tern_proxy_"):
            name, _, value = line.rpartition(" ")
            values[name] = float(value)
    return values


def refused(reason: str) -> str:
    return f'tern_proxy_refused_total{{reason="{reason}"}}'


#----------- The checks ------------------------------------------------------

def check_forward_allow(dnsdist: int) -> None:
    query = dns.message.make_query(FORWARDED, "A")
    for tcp in (False, True):
        allowed = ask(query, "127.0.0.2", dnsdist, tcp)
        if allowed.rcode() != dns.rcode.NOERROR or not allowed.answer:
            fail(f"127.0.0.2 (forward.allow) over {'TCP' if tcp else 'UDP'}: "
                 f"{dns.rcode.to_text(allowed.rcode())} {allowed.answer}")
        other = ask(query, "127.0.0.4", dnsdist, tcp)
        if other.rcode() != dns.rcode.REFUSED:
            fail(f"127.0.0.4 (not in forward.allow) over {'TCP' if tcp else 'UDP'}: "
                 f"{dns.rcode.to_text(other.rcode())}")
    print("proxy: forward.allow sees the client behind dnsdist (UDP and TCP)")


def check_transfer_allow(dnsdist: int, tern: Process) -> None:
    rcode, records = axfr("127.0.0.3", dnsdist)
    if rcode != dns.rcode.NOERROR or records < 5:
        fail(f"AXFR from 127.0.0.3 (transfer.allow): rcode {rcode}, {records} records")
    wait_for("the transfer's log line", lambda: tern.logged("outgoing, to 127.0.0.3"))
    rcode, _ = axfr("127.0.0.2", dnsdist)
    if rcode != dns.rcode.REFUSED:
        fail(f"AXFR from 127.0.0.2 (not in transfer.allow): rcode {rcode}")
    print("proxy: transfer.allow and the transfer log see the client behind dnsdist")


def check_rate_limit(dnsdist: int) -> None:
    query = dns.message.make_query("www.example.com.", "A")
    slipped = 0
    for _ in range(10):
        reply = ask(query, "127.0.0.5", dnsdist)
        slipped += bool(reply.flags & dns.flags.TC)
    if slipped == 0:
        fail("no answer to 127.0.0.5's burst was limited")
    fresh = ask(query, "127.0.0.6", dnsdist)
    if fresh.flags & dns.flags.TC or not fresh.answer:
        fail("127.0.0.6 was limited by 127.0.0.5's burst: RRL keyed on dnsdist's address")
    print(f"proxy: RRL limits the client behind dnsdist ({slipped} of 10 slipped), "
          "not dnsdist")


def check_raw(ports: dict) -> None:
    proxied = ports["proxied"]
    query = dns.message.make_query("www.example.com.", "A", use_edns=False)
    wire = query.to_wire()
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind(("127.0.0.1", 0))
    sock.settimeout(TIMEOUT)
    before = metrics(ports["metrics"])

    def answered(datagram: bytes, what: str) -> None:
        sock.sendto(datagram, ("127.0.0.1", proxied))
        data, source = sock.recvfrom(4096)
        reply = dns.message.from_wire(data)  # no header in front
        # The answer, or its rate-limiting slip (TC=1): the proxy itself (LOCAL)
        # asked before, through dnsdist.
        whole = bool(reply.answer) or bool(reply.flags & dns.flags.TC)
        if source[1] != proxied or reply.id != query.id or not whole:
            fail(f"{what}: {reply}")

    answered(header() + wire, "a valid header")
    answered(header(command=0, family=0, addresses=b"") + wire, "a LOCAL header")

    too_long = header(tlvs=b"\x04" + struct.pack("!H", 1100) + bytes(1100))
    dropped = {
        "missing": [wire],
        "malformed": [
            header()[:20],
            header(version=1) + wire,
            header(command=2) + wire,
            header(family=0x42) + wire,
            header(tlvs=b"\x04\x00\x09\x01") + wire,
            too_long + wire,
        ],
        "unsupported": [
            b"PROXY UDP4 192.0.2.77 127.0.0.1 12345 53\r\n" + wire,
            header(family=0x32, addresses=bytes(216)) + wire,
        ],
    }
    for datagrams in dropped.values():
        for datagram in datagrams:
            sock.sendto(datagram, ("127.0.0.1", proxied))
    stranger = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    stranger.bind(("127.0.0.9", 0))
    stranger.sendto(header() + wire, ("127.0.0.1", proxied))
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as conn:
        conn.bind(("127.0.0.9", 0))
        conn.settimeout(TIMEOUT)
        conn.connect(("127.0.0.1", proxied))
        try:
            conn.sendall(header(family=0x11) + struct.pack("!H", len(wire)) + wire)
            closed = conn.recv(16) == b""
        except ConnectionResetError:
            closed = True
        if not closed:
            fail("a TCP connection from 127.0.0.9 (outside proxy.allow) was answered")
    expected = {name: len(datagrams) for name, datagrams in dropped.items()}
    expected["untrusted"] = 2

    def counted() -> bool:
        now = metrics(ports["metrics"])
        return all(now.get(refused(reason), 0) - before.get(refused(reason), 0) >= count
                   for reason, count in expected.items())
    wait_for(f"the refusals to be counted ({expected})", counted)
    after = metrics(ports["metrics"])
    for reason, count in expected.items():
        got = after[refused(reason)] - before.get(refused(reason), 0)
        if got != count:
            fail(f"{reason}: counted {got}, expected {count}")
    accepted = after["tern_proxy_accepted_total"] - before["tern_proxy_accepted_total"]
    if accepted < 2:
        fail(f"accepted headers counted {accepted}, expected at least 2")
    # Still answering after all of that.
    answered(header() + wire, "a valid header after the hostile ones")
    stranger.close()
    sock.close()
    print(f"proxy: raw headers: 2 answered, dropped and counted: {expected}")


def read_dnstap(path: pathlib.Path) -> list[tuple[str, str, str]]:
    """(type, query_address, qname) of each message `dnstap-read -y` finds."""
    out = subprocess.run(["dnstap-read", "-y", str(path)], capture_output=True, text=True,
                         timeout=60)
    if out.returncode != 0:
        fail(f"dnstap-read: rc {out.returncode}\n{out.stderr}")
    found = []
    for document in out.stdout.split("\n---"):
        kind = re.search(r"^  type: (\S+)", document, re.M)
        address = re.search(r"^  query_address: (\S+)", document, re.M)
        qname = re.search(r";; QUESTION SECTION:\n\s*;(\S+)", document)
        if kind and address and qname:
            found.append((kind.group(1), address.group(1).strip('"'),
                          qname.group(1).lower()))
    return found


def check_dnstap(path: pathlib.Path) -> None:
    messages = read_dnstap(path)
    # Not FORWARDER_QUERY: its query address is tern's own.
    queries = [m for m in messages if m[0] in ("AUTH_QUERY", "CLIENT_QUERY")]
    # 127.0.0.2's were forwarded (CLIENT_QUERY), 127.0.0.4's refused (AUTH_QUERY).
    forwarded = {address for kind, address, qname in queries
                 if kind == "CLIENT_QUERY" and qname == FORWARDED}
    outside = {address for _, address, qname in queries if qname == FORWARDED}
    limited = {address for kind, address, qname in queries
               if kind == "AUTH_QUERY" and qname == "www.example.com."}
    if forwarded != {"127.0.0.2"} or outside != {"127.0.0.2", "127.0.0.4"}:
        fail(f"dnstap: the forwarded name's queries came from {forwarded} / {outside}")
    if not {"127.0.0.5", "127.0.0.6", "192.0.2.77"} <= limited:
        fail(f"dnstap: www.example.com.'s queries came from {limited}")
    # The forwarded answers (UDP and TCP) name the client, not dnsdist.
    answered_to = {address for kind, address, qname in messages
                   if kind == "CLIENT_RESPONSE" and qname == FORWARDED}
    if answered_to != {"127.0.0.2"}:
        fail(f"dnstap: the forwarded name's answers went to {answered_to}")
    print("proxy: dnstap logs the clients behind dnsdist")


def main() -> int:
    tmp = pathlib.Path(tempfile.mkdtemp(prefix="tern-proxy-"))
    upstream = Upstream()
    tern = dnsdist = None
    try:
        tern, ports = start_tern(tmp, upstream.port)
        dnsdist, front = start_dnsdist(tmp, ports["proxied"])
        check_forward_allow(front)
        check_transfer_allow(front, tern)
        check_rate_limit(front)
        check_raw(ports)
        dnsdist.stop()
        tern.stop()
        if tern.proc.returncode != 0:
            fail(f"tern exited with {tern.proc.returncode}:\n{log_tail(tern.log)}")
        check_dnstap(tmp / "tap.fstrm")
        print("proxy: 5 passed, 0 failed")
        return 0
    except (Failure, OSError, dns.exception.DNSException) as err:
        print(f"proxy: FAILED: {err}", file=sys.stderr)
        for process in (tern, dnsdist):
            if process is not None:
                print(f"--- {process.name} log:\n{log_tail(process.log)}", file=sys.stderr)
        return 1
    finally:
        for process in (dnsdist, tern):
            if process is not None:
                process.stop()
        upstream.close()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
