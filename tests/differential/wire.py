"""Sending one query and turning the answer into comparable sections.

A `Response` holds, per section, a value that compares equal exactly when the two servers'
answers are equivalent for that section:

* rcode      extended rcode text
* flags      QR AA TC RD RA AD CD and the opcode (the Z bit is ignored)
* question   the raw question bytes: the client's qname case must be echoed exactly
* answer / authority / additional
             sorted lists (multisets) of RRs; owner names lowercased, RDATA in canonical form
             (RFC 4034 6.2: embedded names lowercased), TTL compared exactly
* opt        (present, EDNS version, DO bit), or None without OPT
"""

from __future__ import annotations

import dataclasses
import socket
import struct
import time

import dns.exception
import dns.flags
import dns.message
import dns.opcode
import dns.rcode
import dns.rdataclass
import dns.rdatatype

SECTIONS = ("rcode", "flags", "question", "answer", "authority", "additional", "opt")
RR_SECTIONS = ("answer", "authority", "additional")
FLAG_BITS = (
    ("qr", dns.flags.QR),
    ("aa", dns.flags.AA),
    ("tc", dns.flags.TC),
    ("rd", dns.flags.RD),
    ("ra", dns.flags.RA),
    ("ad", dns.flags.AD),
    ("cd", dns.flags.CD),
)


@dataclasses.dataclass(frozen=True, order=True)
class RR:
    """One resource record; equality/ordering use only `key`, `text` is for display."""

    key: tuple
    text: str = dataclasses.field(compare=False)


def rr_from(name, ttl, rdata) -> RR:
    key = (
        name.canonicalize().to_wire(),
        rdata.rdtype,
        rdata.rdclass,
        ttl,
        rdata.to_digestable(),
    )
    text = (
        f"{name.to_text()} {ttl} {dns.rdataclass.to_text(rdata.rdclass)} "
        f"{dns.rdatatype.to_text(rdata.rdtype)} {rdata.to_text()}"
    )
    return RR(key, text)


@dataclasses.dataclass
class Response:
    wire: bytes | None = None
    error: str | None = None  # timeout, socket error, unparseable answer
    message: dns.message.Message | None = None
    rcode: int = -1
    flags: str = ""
    question: bytes = b""
    answer: tuple = ()
    authority: tuple = ()
    additional: tuple = ()
    opt: tuple | None = None
    payload: int | None = None  # shown, not compared

    @property
    def ok(self) -> bool:
        return self.error is None

    def section(self, name: str):
        if self.error is not None:
            return ("error", self.error)
        if name == "rcode":
            return dns.rcode.to_text(self.rcode)
        return getattr(self, name)

    def to_text(self) -> str:
        """dig-like rendering (records in canonical order, so outputs line up)."""
        if self.error is not None:
            return f";; ERROR: {self.error}"
        lines = [f";; rcode: {dns.rcode.to_text(self.rcode)}, flags: {self.flags}, size: {len(self.wire)} bytes"]
        if self.opt is None:
            lines.append(";; OPT: none")
        else:
            _, version, do = self.opt
            lines.append(f";; OPT: version {version}, udp {self.payload}{', do' if do else ''}")
        lines.append(f";; QUESTION: {question_text(self.question)}")
        for sec in RR_SECTIONS:
            rrs = getattr(self, sec)
            lines.append(f";; {sec.upper()} ({len(rrs)})")
            lines.extend(f"   {rr.text}" for rr in rrs)
        return "\n".join(lines)


def question_text(raw: bytes) -> str:
    if not raw:
        return "(none)"
    try:
        name, used = dns.name.from_wire(raw, 0)
        qtype, qclass = struct.unpack("!HH", raw[used : used + 4])
        return f"{name.to_text()} {dns.rdataclass.to_text(qclass)} {dns.rdatatype.to_text(qtype)}"
    except Exception:  # pragma: no cover - shown only
        return raw.hex()


def raw_question(wire: bytes) -> bytes:
    """The question section's bytes, exactly as sent (names there are never compressed)."""
    qdcount = struct.unpack("!H", wire[4:6])[0]
    off = 12
    for _ in range(qdcount):
        while True:
            length = wire[off]
            if length & 0xC0:
                off += 2
                break
            off += 1 + length
            if length == 0:
                break
        off += 4
    return wire[12:off]


def flags_text(flags: int) -> str:
    names = [name for name, bit in FLAG_BITS if flags & bit]
    opcode = dns.opcode.to_text(dns.opcode.from_flags(flags))
    return " ".join(names) + ("" if opcode == "QUERY" else f" opcode={opcode}")


def parse(wire: bytes, query_id: int) -> Response:
    resp = Response(wire=wire)
    try:
        msg = dns.message.from_wire(wire, one_rr_per_rrset=True)
    except (dns.exception.DNSException, ValueError, IndexError, struct.error) as e:
        resp.error = f"unparseable answer ({type(e).__name__}: {e}): {wire.hex()}"
        return resp
    if msg.id != query_id:
        resp.error = f"answer id {msg.id} != query id {query_id}"
        return resp
    resp.message = msg
    resp.rcode = msg.rcode()
    resp.flags = flags_text(msg.flags)
    resp.question = raw_question(wire)
    for sec, rrsets in (("answer", msg.answer), ("authority", msg.authority), ("additional", msg.additional)):
        rrs = sorted(rr_from(rrset.name, rrset.ttl, rd) for rrset in rrsets for rd in rrset)
        setattr(resp, sec, tuple(rrs))
    if msg.edns >= 0:
        resp.opt = ("opt", msg.edns, bool(msg.ednsflags & dns.flags.DO))
        resp.payload = msg.payload
    return resp


def _recv_exact(sock: socket.socket, n: int) -> bytes:
    buf = b""
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise ConnectionError("connection closed by server")
        buf += chunk
    return buf


def _once(query: bytes, addr: tuple[str, int], tcp: bool, timeout: float) -> bytes:
    qid = struct.unpack("!H", query[:2])[0]
    if tcp:
        with socket.create_connection(addr, timeout=timeout) as s:
            s.settimeout(timeout)
            s.sendall(struct.pack("!H", len(query)) + query)
            length = struct.unpack("!H", _recv_exact(s, 2))[0]
            return _recv_exact(s, length)
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.settimeout(timeout)
        s.connect(addr)
        s.send(query)
        deadline = time.monotonic() + timeout
        while True:  # skip stray datagrams that do not answer this query
            data = s.recv(65535)
            if len(data) >= 2 and struct.unpack("!H", data[:2])[0] == qid:
                return data
            if time.monotonic() > deadline:
                raise TimeoutError("no matching answer")


def exchange(query: bytes, addr: tuple[str, int], tcp: bool, timeout: float, retries: int = 1) -> Response:
    qid = struct.unpack("!H", query[:2])[0]
    error = ""
    for _ in range(retries + 1):
        try:
            return parse(_once(query, addr, tcp, timeout), qid)
        except (OSError, ConnectionError) as e:  # socket.timeout is an OSError
            error = f"{'tcp' if tcp else 'udp'} {type(e).__name__}: {e or 'timeout'}"
    return Response(error=error)
