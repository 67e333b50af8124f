//! The Prometheus endpoint (`metrics.listen`): the text exposition format
//! over HTTP, answered on a thread of its own, off the query path. Each
//! scrape asks every core for a copy of its plain counters (as `tern
//! stats` does), sums them, and adds the zones' serials and timers.
//!
//! Names follow Prometheus's conventions (a `tern_` prefix, `_total` for
//! counters, seconds and Unix timestamps in seconds) and NSD's where they
//! overlap: `nsd_queries_by_type_total` is `tern_queries_total{type}`,
//! `nsd_queries_by_rcode_total` is `tern_answers_total{rcode}`. docs/
//! operations.md lists every series.
//!
//! The HTTP side is small on purpose: one request per connection, one
//! connection at a time, each bounded by [`CLIENT_TIMEOUT`] and
//! [`MAX_REQUEST`]; `GET /metrics` (or `HEAD`) is answered, anything else
//! gets 404 or 405.

use std::fmt::Write as _;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::Context;
use tern_server::{
    CoreStats, Handle, COOKIE_RESULTS, FAMILIES, QUERY_TYPES, RTT_BUCKETS_MS, TCP_TIMEOUTS,
    TRANSPORTS,
};

use tern_zones::owner::Zones;
use tern_zones::sign_status::ZoneSigning;

/// How long one client may take to send its request and read the answer,
/// in all.
const CLIENT_TIMEOUT: Duration = Duration::from_secs(5);

/// The longest request read (request line and headers).
const MAX_REQUEST: usize = 8 * 1024;

/// The pause after a failed `accept` (e.g. out of descriptors).
const ACCEPT_BACKOFF: Duration = Duration::from_millis(100);

/// The header rcode names, by value, as Prometheus label values.
const RCODE_LABELS: [&str; 16] = [
    "NOERROR", "FORMERR", "SERVFAIL", "NXDOMAIN", "NOTIMP", "REFUSED", "YXDOMAIN", "YXRRSET",
    "NXRRSET", "NOTAUTH", "NOTZONE", "RCODE11", "RCODE12", "RCODE13", "RCODE14", "RCODE15",
];

//----------- Endpoint -------------------------------------------------------

/// What a scrape reads.
pub(crate) struct Sources {
    pub(crate) handle: Handle,
    pub(crate) zones: Arc<Zones>,
    /// When the process started serving.
    pub(crate) started: SystemTime,
}

/// Binds the metrics endpoint's `address` (the port may be 0 in the
/// configuration): at start, before tern drops root, so that a port below
/// 1024 works with `user:` and a failure stops the start before anything
/// serves.
pub(crate) fn bind(address: SocketAddr) -> anyhow::Result<TcpListener> {
    TcpListener::bind(address).with_context(|| format!("binding the metrics endpoint {address}"))
}

/// Answers scrapes on `listener` (bound by [`bind`] before tern dropped
/// root: a port below 1024 needs it) on a thread of its own; the address
/// it listens on.
pub(crate) fn serve(listener: TcpListener, sources: Sources) -> anyhow::Result<SocketAddr> {
    let bound = listener.local_addr()?;
    std::thread::Builder::new()
        .name("tern-metrics".into())
        .spawn(move || loop {
            match listener.accept() {
                Ok((stream, _)) => {
                    if let Err(err) = answer(stream, &sources) {
                        log::debug!("metrics client: {err}");
                    }
                }
                Err(err) => {
                    log::warn!("metrics endpoint: accept failed: {err}");
                    std::thread::sleep(ACCEPT_BACKOFF);
                }
            }
        })
        .context("starting the metrics thread")?;
    Ok(bound)
}

/// Reads one request and answers it.
fn answer(mut stream: TcpStream, sources: &Sources) -> std::io::Result<()> {
    let deadline = Instant::now() + CLIENT_TIMEOUT;
    let mut request = Vec::with_capacity(1024);
    let mut chunk = [0u8; 1024];
    // Bounded by MAX_REQUEST and the deadline: every pass reads at least
    // one octet or ends.
    while !request.windows(4).any(|window| window == b"\r\n\r\n") {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() || request.len() >= MAX_REQUEST {
            return Ok(());
        }
        stream.set_read_timeout(Some(left))?;
        let read = stream.read(&mut chunk)?;
        if read == 0 {
            return Ok(());
        }
        request.extend_from_slice(&chunk[..read]);
    }
    let line = request.split(|&octet| octet == b'\r').next().unwrap_or(&[]);
    let mut words = line.split(|&octet| octet == b' ');
    let (method, target) = (words.next().unwrap_or(&[]), words.next().unwrap_or(&[]));
    let path = target.split(|&octet| octet == b'?').next().unwrap_or(&[]);
    let (status, body) = match (method, path) {
        (b"GET" | b"HEAD", b"/metrics") => ("200 OK", exposition(sources)),
        (b"GET" | b"HEAD", b"/") => ("200 OK", "tern: metrics are at /metrics\n".to_string()),
        (b"GET" | b"HEAD", _) => ("404 Not Found", "not found; try /metrics\n".to_string()),
        _ => ("405 Method Not Allowed", "only GET and HEAD\n".to_string()),
    };
    let mut reply = format!(
        "HTTP/1.1 {status}\r\nContent-Type: text/plain; version=0.0.4; charset=utf-8\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    if method != b"HEAD" {
        reply.push_str(&body);
    }
    // The whole exchange within the deadline: a client that reads a few
    // octets at a time cannot hold the endpoint, which serves one client
    // at a time. Bounded: each pass writes at least one octet or ends.
    let mut rest = reply.as_bytes();
    while !rest.is_empty() {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Ok(());
        }
        stream.set_write_timeout(Some(left))?;
        match stream.write(rest)? {
            0 => return Ok(()),
            written => rest = &rest[written..],
        }
    }
    Ok(())
}

/// The current metrics, in the text exposition format.
fn exposition(sources: &Sources) -> String {
    let cores = sources.handle.stats();
    let total: CoreStats = cores.iter().sum();
    let zones = zone_metrics(&sources.zones);
    let started = sources
        .started
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |since| since.as_secs_f64());
    let mut text = render(&total, cores.len(), started, &zones);
    render_updates(&mut text, &sources.zones.update_counts());
    text
}

/// `tern_updates_total{zone, rcode}`: UPDATEs answered by the update
/// thread (those the cores answer themselves, NOTAUTH and REFUSED for a
/// zone without rules, are not counted). Its labels are bounded: the
/// zones with `update:` rules, times the RCODEs an update can get.
fn render_updates(o: &mut String, counts: &[(tern_zones::load::Origin, u8, u64)]) {
    family(
        o,
        "tern_updates_total",
        "counter",
        "Dynamic updates (RFC 2136) answered by the zones' owner, by zone and RCODE.",
    );
    for (origin, rcode, count) in counts {
        let zone = escape(&tern_zones::load::origin_text(origin));
        const NAMES: [&str; 11] = [
            "NOERROR", "FORMERR", "SERVFAIL", "NXDOMAIN", "NOTIMP", "REFUSED", "YXDOMAIN",
            "YXRRSET", "NXRRSET", "NOTAUTH", "NOTZONE",
        ];
        let rcode = NAMES
            .get(usize::from(*rcode))
            .map_or_else(|| rcode.to_string(), |name| (*name).to_string());
        let _ = writeln!(
            o,
            "tern_updates_total{{zone=\"{zone}\",rcode=\"{rcode}\"}} {count}"
        );
    }
}

//----------- Zones ----------------------------------------------------------

/// One zone's series.
#[derive(Debug, Default)]
pub(crate) struct ZoneMetrics {
    /// The origin in presentation format.
    pub(crate) name: String,
    /// The served serial; `None` for a secondary zone not received yet.
    pub(crate) serial: Option<u32>,
    /// When the served version was loaded or received (Unix seconds).
    pub(crate) loaded: Option<u64>,
    /// For secondary zones: their timers and transfers.
    pub(crate) secondary: Option<tern_zones::owner::Status>,
    /// For signed zones: their signing, and whether a rollover has waited
    /// for the parent's DS longer than `parent-ds-timeout`.
    pub(crate) signing: Option<(ZoneSigning, bool)>,
}

/// Every zone served or expected: primaries, secondaries, consumed
/// catalogs.
/// Signed zones (one entry each, whether served or failed at start)
/// come with their signing.
fn zone_metrics(zones: &Zones) -> Vec<ZoneMetrics> {
    let now = tern_zones::unix_time();
    let mut signing: std::collections::BTreeMap<_, _> =
        tern_zones::sign_status::all().into_iter().collect();
    let mut with_signing = |origin: &[u8]| {
        signing.remove(origin).map(|zone| {
            let overdue = zone.ds_overdue(now);
            (zone, overdue)
        })
    };
    let mut metrics: Vec<ZoneMetrics> = zones
        .views(None)
        .into_iter()
        .map(|view| ZoneMetrics {
            name: tern_zones::load::origin_text(&view.origin),
            serial: view.served.or(view.serial),
            loaded: view.loaded.filter(|_| view.served.is_some()),
            signing: with_signing(&view.origin),
            secondary: view.secondary,
        })
        .collect();
    // Signed zones not served: their signing failed at start.
    metrics.extend(signing.into_iter().map(|(origin, zone)| {
        let overdue = zone.ds_overdue(now);
        ZoneMetrics {
            name: tern_zones::load::origin_text(&origin),
            signing: Some((zone, overdue)),
            ..ZoneMetrics::default()
        }
    }));
    metrics
}

//----------- Rendering ------------------------------------------------------

/// Writes a family's HELP and TYPE lines.
fn family(out: &mut String, name: &str, kind: &str, help: &str) {
    let _ = writeln!(out, "# HELP {name} {help}");
    let _ = writeln!(out, "# TYPE {name} {kind}");
}

/// A family with one unlabelled sample.
fn single(out: &mut String, name: &str, kind: &str, help: &str, value: impl std::fmt::Display) {
    family(out, name, kind, help);
    let _ = writeln!(out, "{name} {value}");
}

/// A label value escaped as the exposition format requires.
fn escape(value: &str) -> String {
    let mut escaped = String::with_capacity(value.len());
    for c in value.chars() {
        match c {
            '\\' => escaped.push_str("\\\\"),
            '"' => escaped.push_str("\\\""),
            '\n' => escaped.push_str("\\n"),
            c => escaped.push(c),
        }
    }
    escaped
}

/// The text exposition of the summed counters `total` of `cores` cores,
/// the process start time (Unix seconds) and the zones.
pub(crate) fn render(
    total: &CoreStats,
    cores: usize,
    started: f64,
    zones: &[ZoneMetrics],
) -> String {
    let mut out = String::with_capacity(16 * 1024);
    let o = &mut out;
    family(
        o,
        "tern_build_info",
        "gauge",
        "The running build: its version.",
    );
    let _ = writeln!(
        o,
        "tern_build_info{{version=\"{}\"}} 1",
        env!("CARGO_PKG_VERSION")
    );
    single(
        o,
        "tern_start_time_seconds",
        "gauge",
        "When the process started serving, in Unix seconds.",
        started,
    );
    single(o, "tern_cores", "gauge", "Cores answering.", cores);

    let zone_names: Vec<String> = total
        .zones
        .iter()
        .map(|(origin, _)| escape(&tern_zones::load::origin_text(origin)))
        .collect();
    family(
        o,
        "tern_queries_total",
        "counter",
        "Queries, by the type of their question (other: the rest, and questions that could not be read), and by zone for the queries answered for one of ours; the series without a zone label count the rest.",
    );
    for (slot, &count) in total.queries_by_type.iter().enumerate() {
        let name = QUERY_TYPES.get(slot).map_or("other", |(_, name)| name);
        let sample = Sample {
            metric: "tern_queries_total",
            label: ("type", name),
            count,
        };
        sample.by_zone(o, total, &zone_names, |zone| zone.queries_by_type[slot]);
    }
    family(
        o,
        "tern_queries_by_transport_total",
        "counter",
        "Queries received, by transport and IP family.",
    );
    for (slot, count) in total.queries_by_transport.iter().enumerate() {
        let _ = writeln!(
            o,
            "tern_queries_by_transport_total{{transport=\"{}\",family=\"{}\"}} {count}",
            TRANSPORTS[slot / 2],
            FAMILIES[slot % 2]
        );
    }
    family(
        o,
        "tern_answers_total",
        "counter",
        "Answers sent, by rcode (BADCOOKIE from the OPT record), and by zone as tern_queries_total.",
    );
    for (rcode, &count) in total.answers_by_rcode.iter().enumerate() {
        let sample = Sample {
            metric: "tern_answers_total",
            label: ("rcode", RCODE_LABELS[rcode]),
            count,
        };
        sample.by_zone(o, total, &zone_names, |zone| zone.answers_by_rcode[rcode]);
    }
    let _ = writeln!(
        o,
        "tern_answers_total{{rcode=\"BADCOOKIE\"}} {}",
        total.badcookie
    );
    single(
        o,
        "tern_answers_from_cache_total",
        "counter",
        "UDP answers copied from the core's answer cache.",
        total.cache_hits,
    );
    single(
        o,
        "tern_answer_cache_misses_total",
        "counter",
        "UDP queries the answer cache could have answered but did not.",
        total.cache_misses,
    );
    single(
        o,
        "tern_answers_truncated_total",
        "counter",
        "Answers sent with TC set.",
        total.truncated,
    );
    single(
        o,
        "tern_queries_dropped_total",
        "counter",
        "Queries not answered: malformed, responses, rate-limited and not slipped, or whose answer could not be sent.",
        total.dropped,
    );
    single(
        o,
        "tern_rrl_limited_total",
        "counter",
        "UDP answers limited by response rate limiting (dropped or slipped).",
        total.rrl_limited,
    );
    single(
        o,
        "tern_rrl_slipped_total",
        "counter",
        "Limited answers sent as a slip (TC=1, or BADCOOKIE).",
        total.rrl_slipped,
    );
    family(
        o,
        "tern_cookies_total",
        "counter",
        "UDP queries with a DNS COOKIE option, by what it held.",
    );
    for (slot, count) in total.cookies.iter().enumerate() {
        let _ = writeln!(
            o,
            "tern_cookies_total{{result=\"{}\"}} {count}",
            COOKIE_RESULTS[slot]
        );
    }
    single(
        o,
        "tern_tcp_connections_accepted_total",
        "counter",
        "TCP connections accepted and served.",
        total.tcp_accepted,
    );
    single(
        o,
        "tern_tcp_connections_open",
        "gauge",
        "TCP connections open now.",
        total.tcp_open,
    );
    single(
        o,
        "tern_tcp_connections_refused_total",
        "counter",
        "TCP connections closed at once at the per-core connection limit.",
        total.tcp_refused,
    );
    family(
        o,
        "tern_tcp_connections_timed_out_total",
        "counter",
        "TCP connections closed by a timeout, by which one.",
    );
    for (slot, count) in total.tcp_timeouts.iter().enumerate() {
        let _ = writeln!(
            o,
            "tern_tcp_connections_timed_out_total{{timeout=\"{}\"}} {count}",
            TCP_TIMEOUTS[slot]
        );
    }
    single(
        o,
        "tern_dnstap_messages_total",
        "counter",
        "dnstap messages whose frame was written to the file or socket.",
        total.dnstap_written,
    );
    family(
        o,
        "tern_dnstap_dropped_total",
        "counter",
        "dnstap messages dropped: a core's buffer was full (buffer), the writer had no reader \
         (no_reader), or they were in its buffer when the connection failed or the stop came \
         (lost).",
    );
    for (reason, count) in tern_dnstap::DNSTAP_DROPPED.iter().zip(total.dnstap_dropped) {
        let _ = writeln!(
            o,
            "tern_dnstap_dropped_total{{reason=\"{reason}\"}} {count}"
        );
    }
    render_xdp(o, &total.xdp);
    render_proxy(o, &total.proxy);
    render_tls(o, &total.tls);
    render_transfers_out(o, &total.transfers_out);
    render_forward(o, &total.forward);
    render_zones(o, zones);
    render_xot(o, &tern_zones::xot::XOT_IN.snapshot());
    render_signing(o, zones);
    out
}

/// Transfers in over TLS (RFC 9103), by outcome (`tern_zones::xot`).
fn render_xot(o: &mut String, counts: &[(tern_zones::xot::XotOutcome, u64)]) {
    family(
        o,
        "tern_xot_transfers_total",
        "counter",
        "Zone transfer attempts over TLS, by direction and outcome.",
    );
    for (outcome, count) in counts {
        let _ = writeln!(
            o,
            "tern_xot_transfers_total{{direction=\"in\",outcome=\"{}\"}} {count}",
            outcome.label()
        );
    }
}

/// The AF_XDP path's series (zero without `xdp.interfaces`).
fn render_xdp(o: &mut String, xdp: &tern_server::XdpStats) {
    single(
        o,
        "tern_xdp_received_total",
        "counter",
        "Frames taken from the AF_XDP sockets.",
        xdp.received,
    );
    single(
        o,
        "tern_xdp_answered_total",
        "counter",
        "Answers sent through the AF_XDP sockets.",
        xdp.answered,
    );
    family(
        o,
        "tern_xdp_dropped_total",
        "counter",
        "Frames dropped on the AF_XDP path, by reason: refused by the frame checks, no free \
         answer frame (no_frame), lost by the kernel before tern (kernel).",
    );
    for refusal in tern_wire::frame::Refusal::ALL {
        let _ = writeln!(
            o,
            "tern_xdp_dropped_total{{reason=\"{}\"}} {}",
            refusal.name(),
            xdp.refused[refusal.index()]
        );
    }
    let _ = writeln!(
        o,
        "tern_xdp_dropped_total{{reason=\"no_frame\"}} {}",
        xdp.no_frame
    );
    let _ = writeln!(
        o,
        "tern_xdp_dropped_total{{reason=\"kernel\"}} {}",
        xdp.kernel_dropped
    );
    family(
        o,
        "tern_xdp_passed_total",
        "counter",
        "Packets for tern's addresses that the XDP program passed to the kernel's sockets, by reason.",
    );
    for (reason, count) in tern_server::XDP_PASSED.iter().zip(xdp.passed) {
        let _ = writeln!(o, "tern_xdp_passed_total{{reason=\"{reason}\"}} {count}");
    }
}

/// The PROXY protocol's series (zero without `proxy.listen`).
fn render_proxy(o: &mut String, proxy: &tern_server::ProxyStats) {
    single(
        o,
        "tern_proxy_accepted_total",
        "counter",
        "PROXY protocol v2 headers accepted on proxy.listen (UDP datagrams and TCP connections).",
        proxy.accepted,
    );
    family(
        o,
        "tern_proxy_refused_total",
        "counter",
        "UDP datagrams and TCP connections on proxy.listen dropped, by reason: a source outside \
         proxy.allow (untrusted), no PROXY v2 header (missing), a broken, cut or too long one \
         (malformed), version 1 or no IP client (unsupported).",
    );
    for (reason, count) in tern_server::PROXY_REFUSALS.iter().zip(proxy.refused) {
        let _ = writeln!(o, "tern_proxy_refused_total{{reason=\"{reason}\"}} {count}");
    }
}

/// DNS over TLS's series (zero without `tls.listen`).
fn render_tls(o: &mut String, tls: &tern_server::TlsStats) {
    single(
        o,
        "tern_tls_connections_accepted_total",
        "counter",
        "DNS over TLS connections accepted and served.",
        tls.accepted,
    );
    single(
        o,
        "tern_tls_connections_open",
        "gauge",
        "DNS over TLS connections open now.",
        tls.open,
    );
    single(
        o,
        "tern_tls_connections_refused_total",
        "counter",
        "DNS over TLS connections closed at once at the per-core connection limit.",
        tls.refused,
    );
    family(
        o,
        "tern_tls_connections_timed_out_total",
        "counter",
        "DNS over TLS connections closed by a timeout after the handshake, by which one.",
    );
    for (slot, count) in tls.timeouts.iter().enumerate() {
        let _ = writeln!(
            o,
            "tern_tls_connections_timed_out_total{{timeout=\"{}\"}} {count}",
            TCP_TIMEOUTS[slot]
        );
    }
    family(
        o,
        "tern_tls_handshakes_total",
        "counter",
        "TLS handshakes by outcome (ok; failed: refused by TLS; timeout: not finished within \
         tcp.initial-timeout; closed: the client went away) and protocol version.",
    );
    for (outcome, row) in tern_server::tls::HANDSHAKE_OUTCOMES
        .iter()
        .zip(tls.handshakes)
    {
        for (version, count) in tern_server::tls::TLS_VERSIONS.iter().zip(row) {
            let _ = writeln!(
                o,
                "tern_tls_handshakes_total{{outcome=\"{outcome}\",version=\"{version}\"}} {count}"
            );
        }
    }
    single(
        o,
        "tern_tls_resumed_total",
        "counter",
        "TLS handshakes that resumed a session (ticket or session id).",
        tls.resumed,
    );
    single(
        o,
        "tern_tls_protocol_errors_total",
        "counter",
        "DNS over TLS connections ended after the handshake because TLS refused what the \
         client sent (a record that does not decrypt; KeyUpdate, warning-alert or \
         renegotiation requests past rustls's limits).",
        tls.protocol_errors,
    );
}

/// Outgoing zone transfers' series: by transport (UDP: IXFR answered
/// with the SOA alone; TCP; TLS, XoT) and outcome, refusals by reason.
fn render_transfers_out(o: &mut String, transfers: &tern_server::XfrOutStats) {
    family(
        o,
        "tern_transfers_out_total",
        "counter",
        "Zone transfer requests answered (AXFR, IXFR), by transport (tls: XoT) and outcome: \
         started, then completed or aborted; refused (see tern_transfers_out_refused_total); \
         bad-tsig.",
    );
    for (transport, row) in tern_server::TRANSFER_TRANSPORTS
        .iter()
        .zip(transfers.outcomes)
    {
        for (outcome, count) in tern_server::TRANSFER_OUTCOMES.iter().zip(row) {
            let _ = writeln!(
                o,
                "tern_transfers_out_total{{transport=\"{transport}\",outcome=\"{outcome}\"}} \
                 {count}"
            );
        }
    }
    family(
        o,
        "tern_transfers_out_refused_total",
        "counter",
        "Zone transfer requests refused, by reason: tls-only (over plain TCP or UDP with \
         transfer.tls-only), client-certificate (over TLS without one from tls.client-ca), \
         address, key, zone, busy.",
    );
    for (reason, count) in tern_server::TRANSFER_REFUSALS
        .iter()
        .zip(transfers.refusals)
    {
        let _ = writeln!(
            o,
            "tern_transfers_out_refused_total{{reason=\"{reason}\"}} {count}"
        );
    }
    single(
        o,
        "tern_transfers_out_running",
        "gauge",
        "Zone transfers out streaming now.",
        transfers.running,
    );
}

/// One sample of a counter that is also counted per zone.
struct Sample<'a> {
    metric: &'a str,
    /// The label the sample has besides `zone`, and its value.
    label: (&'a str, &'a str),
    /// The count over every zone and none.
    count: u64,
}

impl Sample<'_> {
    /// Writes the zones' samples that are not zero (`of` reads a zone's
    /// count) and, without a zone label, the rest of the count.
    fn by_zone(
        &self,
        o: &mut String,
        total: &CoreStats,
        zone_names: &[String],
        of: impl Fn(&tern_server::ZoneCounters) -> u64,
    ) {
        let (metric, (key, value)) = (self.metric, self.label);
        let zoned: u64 = total.zones.iter().map(|(_, zone)| of(zone)).sum();
        let rest = self.count.saturating_sub(zoned);
        let _ = writeln!(o, "{metric}{{{key}=\"{value}\"}} {rest}");
        for ((_, zone), zone_name) in total.zones.iter().zip(zone_names) {
            let count = of(zone);
            if count > 0 {
                let _ = writeln!(
                    o,
                    "{metric}{{zone=\"{zone_name}\",{key}=\"{value}\"}} {count}"
                );
            }
        }
    }
}

/// The forwarder's series.
fn render_forward(o: &mut String, forward: &tern_server::ForwardStats) {
    single(
        o,
        "tern_forward_upstream_queries_total",
        "counter",
        "Queries sent to upstream resolvers.",
        forward.upstream_queries,
    );
    single(
        o,
        "tern_forward_upstream_timeouts_total",
        "counter",
        "Upstream attempts that timed out.",
        forward.upstream_timeouts,
    );
    single(
        o,
        "tern_forward_upstream_rejected_total",
        "counter",
        "Upstream answers dropped: unknown ID, mismatched question, malformed, out of the question's chain, or a wrong or missing cookie.",
        forward.upstream_rejected,
    );
    single(
        o,
        "tern_forward_cache_hits_total",
        "counter",
        "Forwardable queries answered from the forward cache.",
        forward.cache_hits,
    );
    single(
        o,
        "tern_forward_cache_misses_total",
        "counter",
        "Forwardable queries the forward cache could not answer.",
        forward.cache_misses,
    );
    single(
        o,
        "tern_forward_stale_answers_total",
        "counter",
        "Answers served stale after every upstream failed.",
        forward.stale_answers,
    );
    single(
        o,
        "tern_forward_servfails_total",
        "counter",
        "Clients answered SERVFAIL by the forwarder.",
        forward.servfails,
    );
    family(
        o,
        "tern_forward_upstream_rtt_seconds",
        "histogram",
        "Round-trip times of accepted upstream answers (millisecond resolution).",
    );
    let mut cumulative = 0;
    for (bucket, count) in forward.rtt.buckets.iter().enumerate() {
        cumulative += count;
        match RTT_BUCKETS_MS.get(bucket) {
            Some(bound) => {
                let _ = writeln!(
                    o,
                    "tern_forward_upstream_rtt_seconds_bucket{{le=\"{}\"}} {cumulative}",
                    *bound as f64 / 1000.0
                );
            }
            None => {
                let _ = writeln!(
                    o,
                    "tern_forward_upstream_rtt_seconds_bucket{{le=\"+Inf\"}} {cumulative}"
                );
            }
        }
    }
    let _ = writeln!(
        o,
        "tern_forward_upstream_rtt_seconds_sum {}",
        forward.rtt.sum_ms as f64 / 1000.0
    );
    let _ = writeln!(o, "tern_forward_upstream_rtt_seconds_count {cumulative}");
}

/// The zones' series, each with a `zone` label.
fn render_zones(o: &mut String, zones: &[ZoneMetrics]) {
    let each = |o: &mut String,
                name: &str,
                kind: &str,
                help: &str,
                value: &dyn Fn(&ZoneMetrics) -> Option<u64>| {
        family(o, name, kind, help);
        for zone in zones {
            if let Some(value) = value(zone) {
                let _ = writeln!(o, "{name}{{zone=\"{}\"}} {value}", escape(&zone.name));
            }
        }
    };
    let timer = |pick: fn(&tern_zones::refresh::Timers) -> u64| {
        move |zone: &ZoneMetrics| {
            let seconds = pick(&zone.secondary.as_ref()?.timers);
            (seconds != 0).then_some(seconds)
        }
    };
    each(
        o,
        "tern_zone_serial",
        "gauge",
        "The serial served.",
        &|zone| zone.serial.map(u64::from),
    );
    each(
        o,
        "tern_zone_load_timestamp_seconds",
        "gauge",
        "When the served version was loaded or received.",
        &|zone| zone.loaded,
    );
    each(
        o,
        "tern_zone_refresh_timestamp_seconds",
        "gauge",
        "Secondary zones: the last successful refresh.",
        &timer(|timers| timers.last_refresh),
    );
    each(
        o,
        "tern_zone_next_refresh_timestamp_seconds",
        "gauge",
        "Secondary zones: when the next refresh is due.",
        &timer(|timers| timers.next_refresh),
    );
    each(
        o,
        "tern_zone_expiry_timestamp_seconds",
        "gauge",
        "Secondary zones: when the zone expires unless refreshed.",
        &timer(|timers| timers.expires),
    );
    each(
        o,
        "tern_zone_expired",
        "gauge",
        "Secondary zones: 1 while expired (answered SERVFAIL).",
        &|zone| {
            zone.secondary
                .as_ref()
                .map(|status| u64::from(status.expired))
        },
    );
    each(
        o,
        "tern_zone_refresh_failures_total",
        "counter",
        "Secondary zones: refreshes that failed (every primary tried).",
        &|zone| zone.secondary.as_ref().map(|status| status.failures),
    );
    family(
        o,
        "tern_zone_transfers_total",
        "counter",
        "Secondary zones: transfers received, by type.",
    );
    for zone in zones {
        if let Some(status) = &zone.secondary {
            for (kind, count) in ["axfr", "ixfr"].iter().zip(status.transfers) {
                let _ = writeln!(
                    o,
                    "tern_zone_transfers_total{{zone=\"{}\",type=\"{kind}\"}} {count}",
                    escape(&zone.name)
                );
            }
        }
    }
}

/// The signed zones' series (docs/operations.md, "Signing"): one each per
/// signed zone, and the keys by role and state.
fn render_signing(o: &mut String, zones: &[ZoneMetrics]) {
    let each = |o: &mut String,
                name: &str,
                kind: &str,
                help: &str,
                value: &dyn Fn(&ZoneSigning, bool) -> Option<f64>| {
        family(o, name, kind, help);
        for zone in zones {
            let Some((signing, overdue)) = &zone.signing else {
                continue;
            };
            if let Some(value) = value(signing, *overdue) {
                let _ = writeln!(o, "{name}{{zone=\"{}\"}} {value}", escape(&zone.name));
            }
        }
    };
    let time = |time: Option<u64>| time.map(|time| time as f64);
    each(
        o,
        "tern_zone_rrsig_expiry_timestamp_seconds",
        "gauge",
        "Signed zones: the earliest RRSIG expiration of the version served.",
        &|zone, _| time(zone.earliest_expiry),
    );
    each(
        o,
        "tern_zone_rrsig_refresh_seconds",
        "gauge",
        "Signed zones: the policy's rrsig-refresh; signatures expiring within it are overdue for refresh.",
        &|zone, _| Some(zone.refresh as f64),
    );
    each(
        o,
        "tern_zone_next_resign_timestamp_seconds",
        "gauge",
        "Signed zones: when the zone is signed again next (signatures due, a key step, or the retry after a failure).",
        &|zone, _| time(zone.next_resign),
    );
    each(
        o,
        "tern_zone_next_key_event_timestamp_seconds",
        "gauge",
        "Signed zones: when a key's next rollover step is due.",
        &|zone, _| time(zone.next_key_event),
    );
    each(
        o,
        "tern_zone_signing_timestamp_seconds",
        "gauge",
        "Signed zones: when the last successful signing began.",
        &|zone, _| time(zone.last.as_ref().map(|last| last.at)),
    );
    each(
        o,
        "tern_zone_signing_duration_seconds",
        "gauge",
        "Signed zones: how long the last successful signing took.",
        &|zone, _| zone.last.as_ref().map(|last| last.duration),
    );
    each(
        o,
        "tern_zone_signatures_made_total",
        "counter",
        "Signed zones: RRSIGs made (not those kept from the version before).",
        &|zone, _| Some(zone.signatures_total as f64),
    );
    each(
        o,
        "tern_zone_signing_failures_total",
        "counter",
        "Signed zones: signings that failed (the version before served on).",
        &|zone, _| Some(zone.failures_total as f64),
    );
    each(
        o,
        "tern_zone_signing_failure_timestamp_seconds",
        "gauge",
        "Signed zones: when the last signing failed.",
        &|zone, _| time(zone.last_failure.as_ref().map(|failure| failure.at)),
    );
    each(
        o,
        "tern_zone_ds_wait_start_timestamp_seconds",
        "gauge",
        "Signed zones: since when a KSK or CSK rollover waits for the parent's DS.",
        &|zone, _| time(zone.ds_awaited_since),
    );
    each(
        o,
        "tern_zone_ds_wait_overdue",
        "gauge",
        "Signed zones: 1 while a rollover has waited for the parent's DS longer than parent-ds-timeout.",
        &|_, overdue| Some(f64::from(u8::from(overdue))),
    );
    family(
        o,
        "tern_zone_keys",
        "gauge",
        "Signed zones: keys by role and state (active, published, retired, planned, standby, removed).",
    );
    for zone in zones {
        let Some((signing, _)) = &zone.signing else {
            continue;
        };
        for (role, state, count) in &signing.keys {
            let _ = writeln!(
                o,
                "tern_zone_keys{{zone=\"{}\",role=\"{}\",state=\"{state}\"}} {count}",
                escape(&zone.name),
                tern_zones::keys::role_text(*role)
            );
        }
    }
}

//=========== Tests ==========================================================

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn label_values_are_escaped() {
        assert_eq!(escape(r#"a"b\c"#), r#"a\"b\\c"#);
        assert_eq!(escape("a\nb"), "a\\nb");
    }

    #[test]
    fn counters_and_zones_are_rendered() {
        let mut total = CoreStats::default();
        total.queries_by_type[0] = 5; // A
        total.queries_by_type[tern_server::OTHER_TYPE] = 2;
        let mut zone = tern_server::ZoneCounters::default();
        zone.queries_by_type[0] = 3;
        zone.answers_by_rcode[3] = 2;
        total.zones.push((b"\x07example\x03com\x00".to_vec(), zone));
        total.queries_by_transport[3] = 4; // TCP over IPv6
        total.answers_by_rcode[3] = 6;
        total.forward.rtt.buckets[0] = 1; // up to 1 ms
        total.forward.rtt.buckets[3] = 2; // up to 10 ms
        total.forward.rtt.sum_ms = 17;
        total.dnstap_written = 8;
        total.dnstap_dropped = [1, 0, 3];
        total.queries_by_transport[5] = 9; // XDP over IPv6
        total.xdp.received = 12;
        total.xdp.refused[tern_wire::frame::Refusal::Checksum.index()] = 2;
        total.xdp.kernel_dropped = 5;
        total.xdp.passed[1] = 4; // IPv4 options
        total.proxy.accepted = 6;
        total.proxy.refused[0] = 3; // untrusted
        let secondary = tern_zones::owner::Status {
            transfers: [1, 3],
            ..Default::default()
        };
        let signing = ZoneSigning {
            policy: "p".into(),
            refresh: 604_800,
            earliest_expiry: Some(1_700_100_000),
            last: Some(tern_zones::sign_status::LastSigning {
                at: 1_700_000_000,
                duration: 0.25,
                signatures: 42,
            }),
            signatures_total: 50,
            failures_total: 1,
            keys: vec![(tern_dnssec::KeyRole::Csk, "active", 1)],
            ..ZoneSigning::default()
        };
        let zones = [
            ZoneMetrics {
                name: "example.com.".into(),
                serial: Some(7),
                loaded: Some(1_700_000_000),
                secondary: None,
                signing: Some((signing, true)),
            },
            ZoneMetrics {
                name: "example.net.".into(),
                serial: None,
                loaded: None,
                secondary: Some(secondary),
                signing: None,
            },
        ];
        let text = render(&total, 2, 1.5e9, &zones);
        for line in [
            "tern_queries_total{type=\"A\"} 2",
            "tern_queries_total{zone=\"example.com.\",type=\"A\"} 3",
            "tern_answers_total{rcode=\"NXDOMAIN\"} 4",
            "tern_answers_total{zone=\"example.com.\",rcode=\"NXDOMAIN\"} 2",
            "tern_queries_total{type=\"other\"} 2",
            "tern_queries_by_transport_total{transport=\"tcp\",family=\"ipv6\"} 4",
            "tern_forward_upstream_rtt_seconds_bucket{le=\"0.001\"} 1",
            "tern_forward_upstream_rtt_seconds_bucket{le=\"0.005\"} 1",
            "tern_forward_upstream_rtt_seconds_bucket{le=\"0.01\"} 3",
            "tern_forward_upstream_rtt_seconds_bucket{le=\"+Inf\"} 3",
            "tern_forward_upstream_rtt_seconds_sum 0.017",
            "tern_forward_upstream_rtt_seconds_count 3",
            "tern_zone_serial{zone=\"example.com.\"} 7",
            "tern_zone_load_timestamp_seconds{zone=\"example.com.\"} 1700000000",
            "tern_zone_transfers_total{zone=\"example.net.\",type=\"ixfr\"} 3",
            "tern_zone_expired{zone=\"example.net.\"} 0",
            "tern_zone_rrsig_expiry_timestamp_seconds{zone=\"example.com.\"} 1700100000",
            "tern_zone_rrsig_refresh_seconds{zone=\"example.com.\"} 604800",
            "tern_zone_signing_duration_seconds{zone=\"example.com.\"} 0.25",
            "tern_zone_signatures_made_total{zone=\"example.com.\"} 50",
            "tern_zone_signing_failures_total{zone=\"example.com.\"} 1",
            "tern_zone_ds_wait_overdue{zone=\"example.com.\"} 1",
            "tern_zone_keys{zone=\"example.com.\",role=\"csk\",state=\"active\"} 1",
            "tern_cores 2",
            "tern_dnstap_messages_total 8",
            "tern_dnstap_dropped_total{reason=\"buffer\"} 1",
            "tern_dnstap_dropped_total{reason=\"no_reader\"} 0",
            "tern_dnstap_dropped_total{reason=\"lost\"} 3",
            "tern_queries_by_transport_total{transport=\"xdp\",family=\"ipv6\"} 9",
            "tern_xdp_received_total 12",
            "tern_xdp_dropped_total{reason=\"checksum\"} 2",
            "tern_xdp_dropped_total{reason=\"kernel\"} 5",
            "tern_xdp_passed_total{reason=\"ipv4_options\"} 4",
            "tern_proxy_accepted_total 6",
            "tern_proxy_refused_total{reason=\"untrusted\"} 3",
            "tern_proxy_refused_total{reason=\"malformed\"} 0",
        ] {
            assert!(text.lines().any(|l| l == line), "{line} missing:\n{text}");
        }
        let mut xot = String::new();
        render_xot(
            &mut xot,
            &[(tern_zones::xot::XotOutcome::Authentication, 2)],
        );
        assert!(xot.lines().any(|line| line
            == "tern_xot_transfers_total{direction=\"in\",outcome=\"authentication_failed\"} 2"));
        assert!(text.contains("tern_xot_transfers_total{direction=\"in\",outcome=\"received\"}"));
        // A zone not received has no serial line; a primary no timers.
        assert!(!text.contains("tern_zone_serial{zone=\"example.net.\"}"));
        assert!(!text.contains("tern_zone_expired{zone=\"example.com.\"}"));
        // An unsigned zone has no signing series; a signed one no key event
        // when none is planned.
        assert!(!text.contains("tern_zone_signing_failures_total{zone=\"example.net.\"}"));
        assert!(!text.contains("tern_zone_next_key_event_timestamp_seconds{zone="));
    }
}
