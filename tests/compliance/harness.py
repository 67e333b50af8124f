"""Shared by the compliance scripts: the test zone, BIND 9 as a reference server, raw
message exchange over UDP and TCP, and starting/stopping the servers compared.

Servers come from `tests/differential/servers.py` (Knot, NSD, tern) plus `Bind` here; each
runs in its own process group on its own 127.0.0.1 port with its state in a temp directory,
and `stop()` signals only that group. Every exchange has a timeout; nothing leaves loopback.
"""

from __future__ import annotations

import contextlib
import os
import pathlib
import socket
import struct
import sys
import tempfile

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "differential"))

import servers as smod  # noqa: E402  (tests/differential/servers.py)

ZONE = "example"

# Apex SOA/NS/A (genreport queries the apex SOA and DNSKEY), and `big`: a TXT RRset of
# about 430 octets, larger than 100 and smaller than 512, for the "size below 512 is 512"
# check.
ZONE_TEXT = f"""$ORIGIN {ZONE}.
$TTL 300
@    SOA ns1 hostmaster 1 7200 3600 1209600 300
     NS  ns1
ns1  A   192.0.2.1
www  A   192.0.2.80
""" + "".join(f'big TXT "{i:02} {"b" * 60}"\n' for i in range(6))

# How long one exchange waits for an answer, and how long the servers get to start.
EXCHANGE_TIMEOUT = 1.0
START_TIMEOUT = 30.0


class Bind(smod.Server):
    """BIND 9's named, authoritative only (`recursion no`), foreground, one worker."""

    name = "bind"
    # Extra statements for the `options` block (`configured` sets them); empty by default.
    extra_options = ""

    def options_section(self, options: str, extra: str = "") -> str:
        """The `options` block on this server's port and directory, with `options`
        (notify and transfer statements) and `extra` added, and an empty `controls`."""
        return f"""options {{
    directory "{self.workdir}";
    pid-file "{self.workdir}/named.pid";
    session-keyfile "{self.workdir}/session.key";
    managed-keys-directory "{self.workdir}";
    listen-on port {self.port} {{ 127.0.0.1; }};
    listen-on-v6 {{ none; }};
    recursion no;
    dnssec-validation no;
{options}
    minimal-responses yes;
{extra}
}};
controls {{ }};
"""

    def command(self) -> list[str]:
        conf = self.workdir / "named.conf"
        zones = "\n".join(
            f'zone "{z}" {{ type primary; file "{self.zone_dir}/{z}.zone"; }};' for z in self.zones
        )
        options = "    notify no;\n    allow-transfer { none; };"
        conf.write_text(self.options_section(options, self.extra_options) + zones + "\n")
        return ["named", "-g", "-4", "-n", "1", "-c", str(conf)]


class ConfiguredTern(smod.Tern):
    """tern with a YAML configuration file and extra command-line flags (`configured`)."""

    def __init__(self, *args, config_text: str = "", extra_args: tuple[str, ...] = (), **kwargs):
        self.config_text = config_text
        self.extra_args = tuple(extra_args)
        super().__init__(*args, **kwargs)

    def command(self) -> list[str]:
        cmd = super().command()
        if self.config_text:
            conf = self.workdir / "tern.yaml"
            conf.write_text(self.config_text)
            cmd += ["--config", str(conf)]
        return cmd + list(self.extra_args)


def make(name: str, workdir: pathlib.Path, zone_dir: pathlib.Path) -> smod.Server:
    args = (workdir / name, zone_dir, [ZONE])
    if name == "tern":
        return smod.Tern(tern_binary(), *args)
    return {"bind": Bind, "knot": smod.Knot, "nsd": smod.Nsd}[name](*args)


def tern_binary() -> pathlib.Path:
    default = HERE.parent.parent / "target" / "release" / "tern"
    binary = pathlib.Path(os.environ.get("TERN_BIN", default)).resolve()
    if not binary.is_file():
        raise smod.ServerError(
            f"tern binary not found at {binary} (set TERN_BIN, or run "
            "`cargo build --release --bin tern`)"
        )
    return binary


@contextlib.contextmanager
def configured(zone_text: str, tern_config: str, tern_args: tuple[str, ...], bind_options: str):
    """tern and BIND on `zone_text` (the zone `ZONE`), tern with the YAML `tern_config` and
    the flags `tern_args`, BIND with `bind_options` added to its `options` block; yields
    {"tern": server, "bind": server}; stops both."""
    with tempfile.TemporaryDirectory(prefix="tern-compliance-") as tmp:
        tmp = pathlib.Path(tmp)
        zone_dir = tmp / "zones"
        zone_dir.mkdir()
        (zone_dir / f"{ZONE}.zone").write_text(zone_text)
        tern = ConfiguredTern(tern_binary(), tmp / "tern", zone_dir, [ZONE],
                              config_text=tern_config, extra_args=tern_args)
        bind = Bind(tmp / "bind", zone_dir, [ZONE])
        bind.extra_options = bind_options
        started = {"tern": tern, "bind": bind}
        with serving(started):
            yield started


@contextlib.contextmanager
def running(names: list[str]):
    """Starts the named servers on the test zone; yields {name: server}; stops them all."""
    with tempfile.TemporaryDirectory(prefix="tern-compliance-") as tmp:
        tmp = pathlib.Path(tmp)
        zone_dir = tmp / "zones"
        zone_dir.mkdir()
        (zone_dir / f"{ZONE}.zone").write_text(ZONE_TEXT)
        started = {name: make(name, tmp, zone_dir) for name in names}
        with serving(started):
            yield started


@contextlib.contextmanager
def serving(servers: dict[str, smod.Server]):
    """Starts `servers`, waits until each answers, and stops them all on the way out
    (those that started, whatever failed)."""
    started = []
    try:
        for server in servers.values():
            server.start()
            started.append(server)
        for server in started:
            server.wait_ready(START_TIMEOUT)
        yield
    finally:
        for server in started:
            server.stop()


#--- raw messages


def encode_name(text: str) -> bytes:
    out = b""
    for label in text.strip(".").split("."):
        if label:
            out += bytes([len(label)]) + label.encode()
    return out + b"\0"


def header(ident: int, flags: int, qd: int, an: int = 0, ns: int = 0, ar: int = 0) -> bytes:
    return struct.pack("!6H", ident, flags, qd, an, ns, ar)


def opt(udp_size: int = 1232, version: int = 0, flags: int = 0, options: bytes = b"") -> bytes:
    """An OPT record: root owner, type 41, class = UDP size, TTL = ext-rcode/version/flags."""
    return b"\0" + struct.pack("!HHIH", 41, udp_size, (version << 16) | flags, len(options)) + options


def udp_exchange(addr, message: bytes, timeout: float = EXCHANGE_TIMEOUT) -> bytes | None:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.settimeout(timeout)
        s.sendto(message, addr)
        try:
            return s.recv(65535)
        except (socket.timeout, ConnectionRefusedError):
            return None


def recv_exact(s: socket.socket, n: int) -> bytes | None:
    buf = b""
    while len(buf) < n:
        chunk = s.recv(n - len(buf))
        if not chunk:
            return None
        buf += chunk
    return buf


def tcp_receive(s: socket.socket) -> bytes | None:
    """One framed message, or None on timeout, end of file or reset."""
    try:
        prefix = recv_exact(s, 2)
        if prefix is None:
            return None
        return recv_exact(s, struct.unpack("!H", prefix)[0])
    except (socket.timeout, ConnectionError):
        return None


def tcp_connect(addr, timeout: float = EXCHANGE_TIMEOUT) -> socket.socket:
    s = socket.create_connection(addr, timeout=timeout)
    s.settimeout(timeout)
    return s


def tcp_send(s: socket.socket, message: bytes) -> None:
    s.sendall(struct.pack("!H", len(message)) + message)


def tcp_exchange(addr, message: bytes, timeout: float = EXCHANGE_TIMEOUT) -> bytes | None:
    with tcp_connect(addr, timeout) as s:
        tcp_send(s, message)
        return tcp_receive(s)


def udp_exchange_from(addr, message: bytes, source: str,
                      timeout: float = EXCHANGE_TIMEOUT) -> bytes | None:
    """As `udp_exchange`, from the loopback address `source` (e.g. 127.0.0.2)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind((source, 0))
        s.settimeout(timeout)
        s.sendto(message, addr)
        try:
            return s.recv(65535)
        except (socket.timeout, ConnectionRefusedError):
            return None


class Unparsable(Exception):
    pass


def skip_name(msg: bytes, pos: int) -> int:
    """The position after the (possibly compressed) name at `pos`. Bounded by the message."""
    for _ in range(128):
        if pos >= len(msg):
            raise Unparsable("name past the end")
        length = msg[pos]
        if length & 0xC0 == 0xC0:
            return pos + 2
        if length & 0xC0:
            raise Unparsable("bad label type")
        if length == 0:
            return pos + 1
        pos += 1 + length
    raise Unparsable("name too long")


def summarize(msg: bytes) -> dict:
    """Header fields, the full (extended) rcode and the OPT of an answer:
    {id, flags, rcode, counts, opt: None | {version, flags, udp_size, options: [(code, value)]},
     types: [record types of the answer section]}. Raises Unparsable."""
    if len(msg) < 12:
        raise Unparsable("under 12 octets")
    ident, flags, qd, an, ns, ar = struct.unpack("!6H", msg[:12])
    pos = 12
    for _ in range(qd):
        pos = skip_name(msg, pos) + 4
    types, opt_record = [], None
    for index in range(an + ns + ar):
        pos = skip_name(msg, pos)
        if pos + 10 > len(msg):
            raise Unparsable("record past the end")
        rtype, rclass, ttl, rdlen = struct.unpack("!HHIH", msg[pos:pos + 10])
        pos += 10
        rdata = msg[pos:pos + rdlen]
        if len(rdata) != rdlen:
            raise Unparsable("rdata past the end")
        pos += rdlen
        if index < an:
            types.append(rtype)
        if rtype == 41:
            options, at = [], 0
            while at + 4 <= len(rdata):
                code, length = struct.unpack("!HH", rdata[at:at + 4])
                options.append((code, rdata[at + 4:at + 4 + length]))
                at += 4 + length
            opt_record = {"udp_size": rclass, "version": (ttl >> 16) & 0xFF,
                          "flags": ttl & 0xFFFF, "ext_rcode": ttl >> 24, "options": options}
    if pos != len(msg):
        raise Unparsable("trailing octets")
    rcode = (flags & 0xF) | ((opt_record["ext_rcode"] << 4) if opt_record else 0)
    return {"id": ident, "flags": flags, "rcode": rcode, "counts": (qd, an, ns, ar),
            "opt": opt_record, "types": types}
