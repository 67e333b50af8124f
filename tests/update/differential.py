#!/usr/bin/env python3
"""Dynamic update (RFC 2136) against peers (issue 25): the same sequence of UPDATEs sent to
knotd, named and tern, comparing each answer's RCODE and the zone after each step.

    tests/update/sequence.txt (the steps, shared with crates/update/src/tests.rs)
        run 1: nsupdate  (BIND's client, over UDP)  ─┬─► knotd  (acl: key update-key, update)
        run 2: knsupdate (Knot's client, over TCP)  ─┼─► named  (allow-update { key update-key; })
        steps no client can write: dnspython        ─┴─► tern   (zones.list: update: [{key: update-key}])

Each run starts the three servers afresh, each on its own 127.0.0.1 port with its own
copy of the zone, and sends every step of the sequence, signed with TSIG hmac-sha256
(unless the step says `unsigned`), to each. After each step, every server's answer must
carry the step's `expect` RCODE and its zone, read by AXFR and compared as canonical
records (owners lowercased, names in RDATA lowercased for the RFC 4034 6.2 types), must
equal the others' and satisfy the step's `present`, `absent` and `serial` lines. Where
Knot or BIND answers otherwise, DIFFERENCES below says so, step by step, each row from
the table of docs/decisions/0015-dynamic-update.md; any other difference, and any
listed one that does not happen, fails. The zones of the two runs must agree too.

tern side: `TERN_UPDATE=0` leaves tern out; `TERN_UPDATE=1` requires it (failing if tern
does not start with the configuration or refuses a well-formed allowed UPDATE); unset,
tern is asked once (an UPDATE deleting a record that is not there) and, if it does not
start with `update:` in its configuration or answers anything but NOERROR, the script
says "tern side skipped: tern refuses UPDATE" and compares Knot and BIND.

Usage (from the repository root; loopback only; starts and stops every server):

    TERN_BIN=target/release/tern python3 tests/update/differential.py

Exits 1 on any failure, with the step, what differed and the servers' logs.
"""

from __future__ import annotations

import base64
import dataclasses
import os
import pathlib
import re
import socket
import struct
import subprocess
import sys
import tempfile
import time

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "compliance"))
sys.path.insert(0, str(HERE.parent / "differential"))

import dns.exception  # noqa: E402
import dns.message  # noqa: E402
import dns.name  # noqa: E402
import dns.opcode  # noqa: E402
import dns.query  # noqa: E402
import dns.rcode  # noqa: E402
import dns.rdata  # noqa: E402
import dns.rdataclass  # noqa: E402
import dns.rdatatype  # noqa: E402
import dns.rdtypes.ANY.TSIG  # noqa: E402
import dns.renderer  # noqa: E402
import dns.tsig  # noqa: E402
import dns.tsigkeyring  # noqa: E402
import dns.update  # noqa: E402
import dns.zone  # noqa: E402

import harness  # noqa: E402  (tests/compliance/harness.py)
import servers as smod  # noqa: E402  (tests/differential/servers.py)

SEQUENCE = HERE / "sequence.txt"
ORIGIN = "example."
KEY_NAME = "update-key"
SECRET = base64.b64encode(bytes(range(40, 72))).decode()
ALGORITHM = "hmac-sha256"
# How long one client run or one exchange may take.
COMMAND_TIMEOUT = 30
EXCHANGE_TIMEOUT = 10.0

# Where Knot 3.2 or BIND 9.18 answer otherwise than tern (and the RFC), step by step:
# (step, server) -> what that server does instead: `rcode` its answer, `extra` records its
# zone has and tern's has not, `missing` records tern's zone has and its has not. Each
# names its row in docs/decisions/0015-dynamic-update.md; the step after each difference
# that lasts brings the zones back together (the `*-resync` steps of sequence.txt).
SOA = "example. 300 SOA ns1.example. hostmaster.example. {} 3600 900 604800 {}"
DIFFERENCES: dict[tuple[str, str], dict] = {
    # "add a record equal to one present, other TTL": Knot ignores it (the old TTL
    # stays, no new serial); BIND and tern change the RRset's TTL.
    ("ttl-same-record-other-ttl", "knot"): {
        "extra": ["www.example. 60 A 192.0.2.80", "www.example. 60 A 192.0.2.81",
                  "www.example. 60 A 192.0.2.82", SOA.format(11, 300)],
        "missing": ["www.example. 120 A 192.0.2.80", "www.example. 120 A 192.0.2.81",
                    "www.example. 120 A 192.0.2.82", SOA.format(12, 300)],
    },
    # "data or CNAME below a DNAME": Knot 3.2 REFUSED, BIND adds it, tern ignores it.
    ("data-below-dname", "knot"): {"rcode": "REFUSED"},
    ("data-below-dname", "bind"): {
        "extra": ["x.old.example. 300 A 192.0.2.12", SOA.format(104, 300)],
        "missing": [SOA.format(103, 300)],
    },
    # "DNAME at a name with names below it": Knot 3.2 REFUSED, BIND adds it, tern ignores.
    ("dname-above-names", "knot"): {"rcode": "REFUSED"},
    ("dname-above-names", "bind"): {
        "extra": ["c.example. 300 DNAME example.net.", SOA.format(201, 300)],
        "missing": [SOA.format(200, 300)],
    },
    # "re-adding a record present, owner in other case": BIND makes a new serial.
    ("owner-other-case", "bind"): {
        "extra": [SOA.format(1012, 60)],
        "missing": [SOA.format(1011, 60)],
    },
    # "MX whose target has no address in the zone": BIND refuses it (check-integrity).
    ("mx-target-without-address", "bind"): {
        "rcode": "REFUSED",
        "extra": [SOA.format(2001, 300)],
        "missing": ["mx2.example. 300 MX 10 nowhere.example.", SOA.format(2002, 300)],
    },
    # "no rule allows a record": Knot 3.2 answers NOTAUTH, BIND and tern REFUSED.
    ("unsigned-refused", "knot"): {"rcode": "NOTAUTH"},
    # "class ANY update with TTL not 0": Knot accepts it and deletes the RRset.
    ("class-any-with-ttl", "knot"): {
        "rcode": "NOERROR",
        "extra": [SOA.format(2501, 300)],
        "missing": ['www.example. 300 TXT "hello"', SOA.format(2500, 300)],
    },
    # "TXT RDATA whose string runs past its end": Knot 3.2 accepts it and stores it as
    # sent, so its AXFR carries a record no parser reads (dnspython: FormError).
    ("txt-rdata-overruns", "knot"): {"rcode": "NOERROR", "unreadable": True},
}

# The servers, in the order answers are reported.
SERVERS = ("knot", "bind", "tern")


def fail(message: str, *servers: smod.Server) -> None:
    print(f"update/differential: FAIL: {message}")
    for server in servers:
        print(f"--- {server.name} log:\n{server.log_tail(40)}")
    sys.exit(1)


#--- the sequence


@dataclasses.dataclass
class Step:
    label: str
    line: int
    zone: str = ORIGIN
    signed: bool = True
    # (kind, name, type, data): kind yxdomain, nxdomain, yxrrset, nxrrset
    prereqs: list = dataclasses.field(default_factory=list)
    # ("add", name, ttl, type, data) or ("del", name, type or None, data or None)
    updates: list = dataclasses.field(default_factory=list)
    # (section, name, type, class, ttl, hex or None)
    wires: list = dataclasses.field(default_factory=list)
    expect: str = ""
    present: list = dataclasses.field(default_factory=list)
    absent: list = dataclasses.field(default_factory=list)
    serial: int | None = None


def read_sequence(path: pathlib.Path) -> tuple[str, list[Step]]:
    """The zone's text and the steps of `path` (format in its header)."""
    zone_lines: list[str] = []
    steps: list[Step] = []
    in_zone = False
    for number, raw in enumerate(path.read_text().splitlines(), 1):
        line = raw.strip()
        if in_zone:
            if line == "zone-end":
                in_zone = False
            else:
                zone_lines.append(raw)
            continue
        if not line or line.startswith("#"):
            continue
        words = line.split()
        head = words[0]
        if head == "zone-start":
            in_zone = True
            continue
        if head == "step":
            steps.append(Step(words[1], number))
            continue
        if not steps:
            raise ValueError(f"{path}:{number}: `{head}` before the first step")
        step = steps[-1]
        if head == "zone":
            step.zone = words[1]
        elif head == "unsigned":
            step.signed = False
        elif head == "prereq":
            kind, name = words[1], words[2]
            rtype = words[3] if len(words) > 3 else None
            data = " ".join(words[4:]) or None
            step.prereqs.append((kind, name, rtype, data))
        elif head == "add":
            step.updates.append(("add", words[1], int(words[2]), words[3], " ".join(words[4:])))
        elif head == "del":
            rtype = words[2] if len(words) > 2 else None
            step.updates.append(("del", words[1], rtype, " ".join(words[3:]) or None))
        elif head == "wire":
            section, name, rtype, rclass, ttl, data = words[1:7]
            step.wires.append((section, name, rtype, rclass, int(ttl),
                               None if data == "-" else data))
        elif head == "expect":
            step.expect = words[1]
        elif head == "present":
            step.present.append(" ".join(words[1:]))
        elif head == "absent":
            step.absent.append((words[1], words[2], " ".join(words[3:]) or None))
        elif head == "serial":
            step.serial = int(words[1])
        else:
            raise ValueError(f"{path}:{number}: unknown line `{head}`")
    labels = [step.label for step in steps]
    if len(set(labels)) != len(labels):
        raise ValueError(f"{path}: step labels repeat")
    for step in steps:
        if not step.expect:
            raise ValueError(f"{path}:{step.line}: step {step.label} has no `expect`")
    return "\n".join(zone_lines) + "\n", steps


#--- records compared


def canonical(name: str, ttl: int, rdata: dns.rdata.Rdata) -> tuple:
    """A record as compared: owner lowercased, TTL, type, the RDATA's canonical octets
    (RFC 4034 6.2: names lowercased in the types it lists)."""
    origin = dns.name.root
    return (name.lower(), ttl, rdata.rdtype, rdata.to_digestable(origin).hex())


def record_text(text: str) -> tuple:
    """A record of presentation text `owner ttl type data` (absolute names)."""
    owner, ttl, rtype, data = text.split(None, 3)
    rdata = dns.rdata.from_text(dns.rdataclass.IN, rtype, data, origin=dns.name.root)
    return canonical(owner, int(ttl), rdata)


def show(record: tuple) -> str:
    owner, ttl, rtype, digest = record
    rdata = dns.rdata.from_wire(dns.rdataclass.IN, rtype, bytes.fromhex(digest), 0,
                                len(digest) // 2)
    return f"{owner} {ttl} {dns.rdatatype.to_text(rtype)} {rdata.to_text()}"


def axfr(server: smod.Server) -> set:
    messages = dns.query.xfr(server.addr[0], ORIGIN, port=server.addr[1], relativize=False,
                             timeout=EXCHANGE_TIMEOUT, lifetime=60)
    zone = dns.zone.from_xfr(messages, relativize=False)
    return {canonical(name.to_text(), ttl, rdata) for name, ttl, rdata in zone.iterate_rdatas()}


def zone_serial(records: set) -> int | None:
    for owner, _ttl, rtype, digest in records:
        if owner == ORIGIN and rtype == dns.rdatatype.SOA:
            rdata = dns.rdata.from_wire(dns.rdataclass.IN, rtype, bytes.fromhex(digest), 0,
                                        len(digest) // 2)
            return rdata.serial
    return None


#--- the servers


def keyring() -> dict:
    return dns.tsigkeyring.from_text({KEY_NAME: (ALGORITHM, SECRET)})


class Knot(smod.Knot):
    def command(self) -> list[str]:
        (self.workdir / "zones").mkdir(exist_ok=True)
        (self.workdir / "zones" / f"{ORIGIN}zone").write_text(self.zone_text)
        conf = self.workdir / "knot.conf"
        # Knot's log to stderr, unbuffered: the tail a failure prints is complete.
        base = self.base_config().replace("target: stdout", "target: stderr")
        conf.write_text(base + f"""key:
  - id: {KEY_NAME}
    algorithm: {ALGORITHM}
    secret: {SECRET}
acl:
  - id: update
    key: {KEY_NAME}
    action: update
  - id: transfer
    address: 127.0.0.0/8
    action: transfer
template:
  - id: default
    storage: {self.workdir}/zones
    zonefile-sync: -1
    journal-content: changes
    semantic-checks: off
zone:
  - domain: {ORIGIN}
    file: {ORIGIN}zone
    acl: [update, transfer]
""")
        return ["knotd", "-c", str(conf)]


class Bind(harness.Bind):
    def command(self) -> list[str]:
        zone_file = self.workdir / f"{ORIGIN}zone"
        zone_file.write_text(self.zone_text)
        conf = self.workdir / "named.conf"
        options = "    notify no;\n    allow-transfer { 127.0.0.0/8; };"
        conf.write_text(self.options_section(options) + f"""key "{KEY_NAME}" {{ algorithm {ALGORITHM}; secret "{SECRET}"; }};
zone "{ORIGIN}" {{
    type primary;
    file "{zone_file}";
    allow-update {{ key "{KEY_NAME}"; }};
}};
""")
        return ["named", "-g", "-4", "-n", "1", "-c", str(conf)]


class Tern(harness.ConfiguredTern):
    def command(self) -> list[str]:
        zone_file = self.workdir / f"{ORIGIN}zone"
        zone_file.write_text(self.zone_text)
        (self.workdir / "state").mkdir(exist_ok=True)
        self.config_text = tern_config(zone_file, self.workdir / "state", self.zone_dir)
        return tern_command(self)


def tern_command(tern: harness.ConfiguredTern) -> list[str]:
    """tern with its configuration and no `--zones` (which would replace `zones.list`)."""
    conf = tern.workdir / "tern.yaml"
    conf.write_text(tern.config_text)
    return [str(tern.binary), "serve", "--listen", f"127.0.0.1:{tern.port}", "--config",
            str(conf)]


def tern_config(zone_file: pathlib.Path, state: pathlib.Path, empty: pathlib.Path) -> str:
    """tern's configuration: the zone in `zones.list` with one update rule, the key, AXFR
    allowed from loopback; its zone directory `empty`."""
    return f"""control-socket: {state}/tern.sock
keys:
  - {{name: {KEY_NAME}, algorithm: {ALGORITHM}, secret: "{SECRET}"}}
zones:
  directory: {empty}
  list:
    - origin: {ORIGIN}
      file: {zone_file}
      update:
        - {{key: {KEY_NAME}}}
transfer:
  allow: ["127.0.0.0/8"]
state-directory: {state}
"""


def make_server(name: str, root: pathlib.Path, zone_text: str) -> smod.Server:
    """Server `name` in `root/name`, on its own copy of the zone (written at start)."""
    empty = root / "no-zones"
    empty.mkdir(exist_ok=True)
    args = (root / name, empty, [ORIGIN.rstrip(".")])
    if name == "tern":
        server = Tern(harness.tern_binary(), *args)
    else:
        server = {"knot": Knot, "bind": Bind}[name](*args)
    server.zone_text = zone_text
    return server


#--- sending a step


def client_script(step: Step, server: smod.Server) -> str:
    """The step as nsupdate and knsupdate both read it on stdin."""
    lines = [f"server {server.addr[0]} {server.addr[1]}", f"zone {step.zone}"]
    for kind, name, rtype, data in step.prereqs:
        lines.append(" ".join(part for part in ("prereq", kind, name, rtype, data) if part))
    for update in step.updates:
        if update[0] == "add":
            _, name, ttl, rtype, data = update
            lines.append(f"update add {name} {ttl} {rtype} {data}")
        else:
            _, name, rtype, data = update
            lines.append(" ".join(part for part in ("update delete", name, rtype, data) if part))
    lines += ["send", "answer", ""]
    return "\n".join(lines)


def send_with_tool(tool: str, step: Step, server: smod.Server) -> str:
    """Runs `tool` (nsupdate over UDP, knsupdate over TCP) with the step on stdin; the
    RCODE it reports from the answer."""
    command = [tool, "-t", "10"]
    if tool == "knsupdate":
        command.append("-v")
    if step.signed:
        command += ["-y", f"{ALGORITHM}:{KEY_NAME}:{SECRET}"]
    script = client_script(step, server)
    done = subprocess.run(command, input=script, capture_output=True, text=True,
                          timeout=COMMAND_TIMEOUT)
    output = done.stdout + done.stderr
    found = re.findall(r"status: (\w+)", output)
    if not found:
        fail(f"step {step.label}: {tool} to {server.name} reported no answer "
             f"(exit {done.returncode}):\n{script}\n{output}", server)
    return found[-1]


def render(step: Step) -> tuple[bytes, bytes]:
    """The step as dnspython writes it: prerequisites and updates as the clients would,
    then the `wire` records octet by octet (dnspython itself would write an empty RRset's
    TTL as 0), signed unless the step is `unsigned`; the message and its TSIG MAC."""
    message = dns.update.UpdateMessage(step.zone)
    for kind, name, rtype, data in step.prereqs:
        if kind == "yxdomain":
            message.present(name)
        elif kind == "nxdomain":
            message.absent(name)
        elif kind == "yxrrset" and data is None:
            message.present(name, rtype)
        elif kind == "yxrrset":
            message.present(name, dns.rdata.from_text("IN", rtype, data))
        else:
            message.absent(name, rtype)
    for update in step.updates:
        if update[0] == "add":
            _, name, ttl, rtype, data = update
            message.add(name, ttl, rtype, data)
        else:
            _, name, rtype, data = update
            if rtype is None:
                message.delete(name)
            elif data is None:
                message.delete(name, rtype)
            else:
                message.delete(name, rtype, data)
    out = dns.renderer.Renderer(message.id, dns.opcode.to_flags(dns.opcode.UPDATE))
    out.add_question(dns.name.from_text(step.zone), dns.rdatatype.SOA, dns.rdataclass.IN)
    for section, rrsets in ((dns.renderer.ANSWER, message.prerequisite),
                            (dns.renderer.AUTHORITY, message.update)):
        for rrset in rrsets:
            out.add_rrset(section, rrset)
        wanted = "prereq" if section == dns.renderer.ANSWER else "update"
        for where, name, rtype, rclass, ttl, data in step.wires:
            if where != wanted:
                continue
            rdata = bytes.fromhex(data) if data else b""
            out._set_section(section)
            dns.name.from_text(name).to_wire(out.output)
            out.output.write(struct.pack("!HHIH", dns.rdatatype.from_text(rtype),
                                         dns.rdataclass.from_text(rclass), ttl, len(rdata)))
            out.output.write(rdata)
            out.counts[section] += 1
    out.write_header()
    if not step.signed:
        return out.get_wire(), b""
    key = keyring()[dns.name.from_text(KEY_NAME)]
    tsig = dns.rdtypes.ANY.TSIG.TSIG(dns.rdataclass.ANY, dns.rdatatype.TSIG, key.algorithm, 0,
                                     300, b"", message.id, 0, b"")
    tsig, _ = dns.tsig.sign(out.get_wire(), key, tsig, int(time.time()), b"")
    out._write_tsig(tsig, key.name)
    return out.get_wire(), tsig.mac


def send_with_dnspython(step: Step, server: smod.Server, tcp: bool) -> str:
    """The RCODE of the server's answer to the step sent by dnspython. The answer to a
    signed request must verify, but for an error the server may send unsigned (RFC 8945
    5.3: it may not have read the TSIG of a message it could not parse)."""
    wire, mac = render(step)
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM if tcp else socket.SOCK_DGRAM) as sock:
            sock.settimeout(EXCHANGE_TIMEOUT)
            sock.connect(server.addr)
            if tcp:
                sock.sendall(struct.pack("!H", len(wire)) + wire)
                length = struct.unpack("!H", read_exactly(sock, 2))[0]
                data = read_exactly(sock, length)
            else:
                sock.send(wire)
                data = sock.recv(65535)
    except OSError as error:
        return f"no answer ({type(error).__name__}: {error})"
    try:
        answer = dns.message.from_wire(data, keyring=keyring() if mac else None,
                                       request_mac=mac)
    except dns.exception.DNSException as error:
        unsigned = dns.message.from_wire(data)
        if unsigned.tsig or unsigned.rcode() == dns.rcode.NOERROR:
            fail(f"step {step.label}: {server.name}'s answer does not verify: {error}", server)
        answer = unsigned
    return dns.rcode.to_text(answer.rcode())


def read_exactly(sock: socket.socket, count: int) -> bytes:
    data = b""
    while len(data) < count:
        chunk = sock.recv(count - len(data))
        if not chunk:
            raise ConnectionError("connection closed before the answer's end")
        data += chunk
    return data


def send(tool: str, step: Step, server: smod.Server) -> str:
    if step.wires:
        return send_with_dnspython(step, server, tcp=tool == "knsupdate")
    return send_with_tool(tool, step, server)


#--- checking a step


def expected_zone(step: Step, name: str, records: set, server: smod.Server) -> set:
    """`records` with the server's listed difference at this step undone: tern's zone."""
    difference = DIFFERENCES.get((step.label, name), {})
    extra = {record_text(text) for text in difference.get("extra", [])}
    missing = {record_text(text) for text in difference.get("missing", [])}
    if not extra <= records or missing & records:
        fail(f"step {step.label}: {name}'s listed difference did not happen: "
             f"extra not there {sorted(map(show, extra - records))}, "
             f"missing there {sorted(map(show, missing & records))} (its serial is "
             f"{zone_serial(records)})", server)
    return (records - extra) | missing


def expect_unreadable(step: Step, server: smod.Server) -> None:
    """The server's AXFR after a step it got wrong does not parse, as listed."""
    try:
        axfr(server)
    except dns.exception.FormError:
        return
    fail(f"step {step.label}: {server.name}'s zone was listed as unreadable but reads", server)


def check_assertions(step: Step, records: set, servers) -> None:
    for text in step.present:
        if record_text(text) not in records:
            fail(f"step {step.label} (line {step.line}): `{text}` is not in the zone", *servers)
    for owner, rtype, data in step.absent:
        code = dns.rdatatype.from_text(rtype)
        if data is None:
            found = [r for r in records if r[0] == owner.lower() and r[2] == code]
        else:
            target = record_text(f"{owner} 0 {rtype} {data}")
            found = [r for r in records if r[0] == target[0] and r[2:] == target[2:]]
        if found:
            fail(f"step {step.label} (line {step.line}): {owner} {rtype} {data or ''} is in "
                 f"the zone: {[show(r) for r in found]}", *servers)
    if step.serial is not None and zone_serial(records) != step.serial:
        fail(f"step {step.label} (line {step.line}): serial {zone_serial(records)}, "
             f"expected {step.serial}", *servers)


def run(tool: str, steps: list[Step], zone_text: str, with_tern: bool) -> list[set]:
    """Every step sent with `tool` to fresh servers; the zone expected after each."""
    names = [name for name in SERVERS if with_tern or name != "tern"]
    with tempfile.TemporaryDirectory(prefix="tern-update-") as tmp:
        root = pathlib.Path(tmp)
        started = {name: make_server(name, root, zone_text) for name in names}
        zones: list[set] = []
        with harness.serving(started):
            servers = list(started.values())
            for step in steps:
                reference = None
                for name, server in started.items():
                    rcode = send(tool, step, server)
                    wanted = DIFFERENCES.get((step.label, name), {}).get("rcode", step.expect)
                    if rcode != wanted:
                        fail(f"step {step.label} (line {step.line}) with {tool}: {name} "
                             f"answered {rcode}, expected {wanted}", server)
                    if DIFFERENCES.get((step.label, name), {}).get("unreadable"):
                        expect_unreadable(step, server)
                        continue
                    records = expected_zone(step, name, axfr(server), server)
                    if reference is None:
                        reference = (name, records)
                    elif records != reference[1]:
                        ours, theirs = sorted(records - reference[1]), sorted(reference[1] - records)
                        fail(f"step {step.label} (line {step.line}) with {tool}: zones differ: "
                             f"{name} has {[show(r) for r in ours]}, {reference[0]} has "
                             f"{[show(r) for r in theirs]}", *servers)
                check_assertions(step, reference[1], servers)
                zones.append(reference[1])
        print(f"update/differential: {tool}: {len(steps)} steps, {' '.join(names)} agree "
              f"(with the {sum(1 for (s, n) in DIFFERENCES if n in names)} differences listed)")
        return zones


#--- whether tern takes part


def tern_takes_updates(zone_text: str) -> tuple[bool, str]:
    """Starts tern with the update configuration and sends one allowed UPDATE (a deletion
    of a record that is not there); whether it answered NOERROR, and why not."""
    try:
        binary = harness.tern_binary()
    except smod.ServerError as error:
        return False, str(error)
    del binary
    with tempfile.TemporaryDirectory(prefix="tern-update-probe-") as tmp:
        tern = make_server("tern", pathlib.Path(tmp), zone_text)
        try:
            with harness.serving({"tern": tern}):
                probe = Step("probe", 0, updates=[("del", "probe." + ORIGIN, "TXT", None)])
                rcode = send_with_dnspython(probe, tern, tcp=True)
        except smod.ServerError as error:
            last = str(error).strip().splitlines()
            return False, f"tern does not start with `update:` in its configuration ({last[-1] if last else ''})"
        if rcode != "NOERROR":
            return False, f"tern answers {rcode} to a well-formed allowed UPDATE"
        return True, ""


def main() -> None:
    zone_text, steps = read_sequence(SEQUENCE)
    mode = os.environ.get("TERN_UPDATE", "")
    if mode not in ("", "0", "1"):
        fail(f"TERN_UPDATE is {mode!r}: 0 (leave tern out), 1 (require it) or unset (detect)")
    with_tern = False
    if mode != "0":
        with_tern, why = tern_takes_updates(zone_text)
        if not with_tern and mode == "1":
            fail(f"TERN_UPDATE=1 but {why}")
        if not with_tern:
            print(f"update/differential: tern side skipped: tern refuses UPDATE ({why})")
    else:
        print("update/differential: tern side skipped (TERN_UPDATE=0)")
    by_nsupdate = run("nsupdate", steps, zone_text, with_tern)
    by_knsupdate = run("knsupdate", steps, zone_text, with_tern)
    for step, one, other in zip(steps, by_nsupdate, by_knsupdate):
        if one != other:
            fail(f"step {step.label}: the zone after nsupdate's run differs from knsupdate's: "
                 f"{[show(r) for r in sorted(one ^ other)]}")
    print("update/differential: PASS")


if __name__ == "__main__":
    main()
