//! The YAML mirror of the configuration file, as written. This is the only
//! module that knows about YAML, so the YAML library stays replaceable here.
//!
//! Every value is checked while it is deserialized (the [`Parsed`] scalars
//! and the `listen` and `cores` visitors call the parsers of `value`): an
//! error returned from inside the YAML deserializer gets the key's path and
//! the line and column attached to it, e.g.
//! `tcp.idle-timeout: bad duration "10x"; ... at line 4 column 17`.

use std::fmt;
use std::marker::PhantomData;
use std::net::SocketAddr;
use std::time::Duration;

use serde::de::{self, Deserializer, SeqAccess, Visitor};
use serde::Deserialize;

use tern_server::Driver;

use super::value;

/// The most listen addresses one configuration may name (each one is a UDP
/// and a TCP socket on every core).
pub(crate) const MAX_LISTEN: usize = 64;

/// The longest CHAOS answer: a TXT character-string holds 255 octets.
const MAX_CHAOS_TEXT: usize = 255;

//----------- RawConfig ------------------------------------------------------

/// The configuration file's top level. Every key is optional.
#[derive(Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub(crate) struct RawConfig {
    pub(crate) listen: Option<Listen>,
    pub(crate) cores: Option<Cores>,
    pub(crate) driver: Option<Parsed<DriverKind>>,
    pub(crate) zones: Option<RawZones>,
    pub(crate) udp_size: Option<Parsed<Range<{ value::MIN_UDP_SIZE }, { value::MAX_UDP_SIZE }>>>,
    pub(crate) tcp: Option<RawTcp>,
    pub(crate) cache: Option<RawCache>,
    pub(crate) log_level: Option<Parsed<LogLevelKind>>,
    pub(crate) control_socket: Option<Parsed<PathKind>>,
    pub(crate) identity: Option<Parsed<ChaosTextKind>>,
    pub(crate) version: Option<Parsed<ChaosTextKind>>,
    pub(crate) chaos: Option<RawChaos>,
    pub(crate) nsid: Option<Parsed<NsidKind>>,
    pub(crate) forward: Option<RawForward>,
    pub(crate) rate_limit: Option<RawRateLimit>,
    pub(crate) cookies: Option<RawCookies>,
    pub(crate) keys: Option<Vec<RawKey>>,
    pub(crate) transfer: Option<RawTransfer>,
    pub(crate) state_directory: Option<Parsed<PathKind>>,
    pub(crate) notify: Option<RawNotify>,
    pub(crate) metrics: Option<RawMetrics>,
    pub(crate) user: Option<String>,
    pub(crate) dnstap: Option<RawDnstap>,
    pub(crate) xdp: Option<RawXdp>,
    pub(crate) dnssec: Option<RawDnssec>,
    pub(crate) proxy: Option<RawProxy>,
    pub(crate) tls: Option<RawTls>,
    pub(crate) zone_file_sync: Option<Parsed<SyncKind>>,
    /// `update-queue`: updates waiting per zone (`config/update.rs`).
    pub(crate) update_queue: Option<Parsed<Range<1, { value::MAX_UPDATE_QUEUE }>>>,
    /// `update-rate`: updates a second per TSIG key; 0: no limit.
    pub(crate) update_rate: Option<Parsed<Range<0, { value::MAX_UPDATE_RATE }>>>,
}

/// `tls:`, DNS over TLS (`config/tls.rs`).
#[derive(Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub(crate) struct RawTls {
    pub(crate) listen: Option<Listen>,
    pub(crate) certificate: Option<Parsed<PathKind>>,
    pub(crate) key: Option<Parsed<PathKind>>,
    pub(crate) client_ca: Option<Parsed<PathKind>>,
}

/// `proxy:`, the PROXY protocol v2 (`config/proxy.rs`).
#[derive(Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawProxy {
    pub(crate) allow: Option<Vec<Parsed<CidrKind>>>,
    pub(crate) listen: Option<Listen>,
}

/// `dnssec:`, signing (issue 24).
#[derive(Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub(crate) struct RawDnssec {
    pub(crate) policies: Option<Vec<RawPolicy>>,
    pub(crate) signing_threads: Option<Parsed<Range<1, { value::MAX_SIGNING_THREADS }>>>,
}

/// One policy of `dnssec.policies`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub(crate) struct RawPolicy {
    pub(crate) name: Parsed<PolicyNameKind>,
    pub(crate) algorithm: Option<Parsed<DnssecAlgorithmKind>>,
    pub(crate) key_size: Option<Parsed<KeySizeKind>>,
    pub(crate) keys: Option<Parsed<KeySchemeKind>>,
    pub(crate) zsk_lifetime: Option<Parsed<LifetimeKind>>,
    pub(crate) ksk_lifetime: Option<Parsed<LifetimeKind>>,
    pub(crate) rrsig_lifetime: Option<Parsed<LifetimeKind>>,
    pub(crate) rrsig_refresh: Option<Parsed<LifetimeKind>>,
    pub(crate) rrsig_jitter: Option<Parsed<LifetimeKind>>,
    pub(crate) nsec3: Option<RawNsec3>,
    pub(crate) dnskey_ttl: Option<Parsed<TtlKind>>,
    pub(crate) cds_cdnskey: Option<Parsed<CdsKind>>,
    pub(crate) parent: Option<RawParent>,
    pub(crate) propagation_delay: Option<Parsed<LifetimeKind>>,
    pub(crate) parent_ds_ttl: Option<Parsed<LifetimeKind>>,
    pub(crate) parent_ds_timeout: Option<Parsed<LifetimeKind>>,
    pub(crate) serial_policy: Option<Parsed<SerialPolicyKind>>,
}

/// A policy's `nsec3:`; its presence chooses NSEC3.
#[derive(Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub(crate) struct RawNsec3 {
    pub(crate) iterations: Option<Parsed<Range<0, { value::MAX_NSEC3_ITERATIONS }>>>,
    pub(crate) salt_length: Option<Parsed<Range<0, { value::MAX_NSEC3_SALT }>>>,
    pub(crate) opt_out: Option<bool>,
    pub(crate) salt_lifetime: Option<Parsed<LifetimeKind>>,
}

/// A policy's `parent:`, where the DS set is checked.
#[derive(Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub(crate) struct RawParent {
    pub(crate) servers: Option<Vec<Parsed<AddressKind>>>,
    pub(crate) check_interval: Option<Parsed<LifetimeKind>>,
}

/// `xdp:`, the AF_XDP path.
#[derive(Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawXdp {
    pub(crate) interfaces: Option<Vec<String>>,
}

/// `dnstap:`, logging of queries and responses; exactly one of `socket`
/// and `file` turns it on.
#[derive(Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub(crate) struct RawDnstap {
    pub(crate) socket: Option<Parsed<PathKind>>,
    pub(crate) file: Option<Parsed<PathKind>>,
    pub(crate) identity: Option<Parsed<DnstapTextKind>>,
    pub(crate) version: Option<Parsed<DnstapTextKind>>,
    pub(crate) buffer: Option<Parsed<Range<1, { tern_dnstap::MAX_BUFFER }>>>,
    pub(crate) log_queries: Option<bool>,
    pub(crate) log_responses: Option<bool>,
}

/// `metrics:`, the Prometheus endpoint.
#[derive(Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawMetrics {
    pub(crate) listen: Option<Parsed<AddressKind>>,
}

/// `notify:`, where NOTIFYs go when a serial changes.
#[derive(Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawNotify {
    pub(crate) targets: Option<Vec<Parsed<AddressKind>>>,
    pub(crate) key: Option<Parsed<KeyNameKind>>,
}

/// One TSIG key of `keys:`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawKey {
    pub(crate) name: Parsed<KeyNameKind>,
    pub(crate) algorithm: Parsed<AlgorithmKind>,
    pub(crate) secret: Parsed<Base64Kind>,
}

/// `transfer:`, who may transfer our zones.
#[derive(Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawTransfer {
    pub(crate) allow: Option<Vec<Parsed<CidrKind>>>,
    pub(crate) key: Option<Parsed<KeyNameKind>>,
    #[serde(rename = "ixfr-history")]
    pub(crate) ixfr_history: Option<Parsed<SizeKind>>,
    #[serde(rename = "max-zone-records")]
    pub(crate) max_zone_records: Option<Parsed<Range<1, { value::MAX_ZONE_RECORDS }>>>,
    #[serde(rename = "max-zone-size")]
    pub(crate) max_zone_size: Option<Parsed<SizeKind>>,
    #[serde(rename = "tls-only")]
    pub(crate) tls_only: Option<bool>,
}

/// `rate-limit:`, response rate limiting (docs/config.md); the section's
/// presence turns it on.
#[derive(Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub(crate) struct RawRateLimit {
    pub(crate) responses_per_second: Option<Parsed<Range<0, { value::MAX_RRL_RATE }>>>,
    pub(crate) nxdomains_per_second: Option<Parsed<Range<0, { value::MAX_RRL_RATE }>>>,
    pub(crate) errors_per_second: Option<Parsed<Range<0, { value::MAX_RRL_RATE }>>>,
    pub(crate) window: Option<Parsed<WindowKind>>,
    pub(crate) slip: Option<Parsed<Range<0, { value::MAX_RRL_SLIP }>>>,
    pub(crate) ipv4_prefix_length: Option<Parsed<Range<0, 32>>>,
    pub(crate) ipv6_prefix_length: Option<Parsed<Range<0, 128>>>,
    pub(crate) exempt: Option<Vec<Parsed<CidrKind>>>,
    pub(crate) table_size:
        Option<Parsed<Range<{ value::MIN_RRL_TABLE_SIZE }, { value::MAX_RRL_TABLE_SIZE }>>>,
}

/// `cookies:`, DNS cookies (RFC 7873, RFC 9018).
#[derive(Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawCookies {
    pub(crate) enabled: Option<bool>,
    pub(crate) secret: Option<Parsed<SecretKind>>,
}

/// `forward:`, the caching forwarder (docs/config.md).
#[derive(Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub(crate) struct RawForward {
    pub(crate) allow: Option<Vec<Parsed<CidrKind>>>,
    pub(crate) upstreams: Option<Vec<Parsed<AddressKind>>>,
    pub(crate) policy: Option<Parsed<PolicyKind>>,
    pub(crate) race: Option<Parsed<Range<1, { tern_server::MAX_UPSTREAMS }>>>,
    pub(crate) timeout: Option<Parsed<DurationKind>>,
    pub(crate) retries: Option<Parsed<Range<0, { value::MAX_FORWARD_RETRIES }>>>,
    pub(crate) stale_ttl: Option<Parsed<DurationKind>>,
    pub(crate) negative_ttl_max: Option<Parsed<DurationKind>>,
    pub(crate) servfail_ttl: Option<Parsed<DurationKind>>,
    pub(crate) cache_entries: Option<Parsed<Range<0, { value::MAX_CACHE_ENTRIES }>>>,
    pub(crate) cache_bytes: Option<Parsed<SizeKind>>,
    pub(crate) max_in_flight: Option<Parsed<Range<1, { value::MAX_FORWARD_IN_FLIGHT }>>>,
    pub(crate) max_waiters: Option<Parsed<Range<1, { value::MAX_FORWARD_WAITERS }>>>,
}

/// `zones:` with a directory and/or a list.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawZones {
    pub(crate) directory: Option<Parsed<PathKind>>,
    pub(crate) list: Option<Vec<RawZone>>,
    pub(crate) secondary: Option<Vec<RawSecondary>>,
    #[serde(rename = "catalog-producer")]
    pub(crate) catalog_producer: Option<Parsed<OriginKind>>,
    pub(crate) catalog: Option<Vec<RawSecondary>>,
}

/// One zone of `zones.secondary`: received by transfer.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawSecondary {
    pub(crate) origin: Parsed<OriginKind>,
    pub(crate) primaries: Vec<Parsed<AddressKind>>,
    pub(crate) key: Option<Parsed<KeyNameKind>>,
    pub(crate) transfer: Option<RawTransfer>,
    pub(crate) notify: Option<RawNotify>,
    #[serde(rename = "dnssec-policy")]
    pub(crate) dnssec_policy: Option<Parsed<PolicyNameKind>>,
    pub(crate) tls: Option<RawXot>,
    /// `update`: what an UPDATE of the zone gets (`forward`, `refused`,
    /// `notauth`; `config/update.rs`).
    pub(crate) update: Option<String>,
}

/// `tls:` of a secondary zone: transfers in over TLS (`config/xot.rs`).
#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub(crate) struct RawXot {
    pub(crate) name: Option<String>,
    pub(crate) pin: Option<String>,
    pub(crate) ca: Option<Parsed<PathKind>>,
    pub(crate) fallback: Option<String>,
    pub(crate) plain_port: Option<Parsed<Range<1, 65535>>>,
}

/// One zone of the list.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawZone {
    pub(crate) origin: Parsed<OriginKind>,
    pub(crate) file: Parsed<PathKind>,
    pub(crate) key: Option<Parsed<KeyNameKind>>,
    pub(crate) transfer: Option<RawTransfer>,
    pub(crate) notify: Option<RawNotify>,
    #[serde(rename = "dnssec-policy")]
    pub(crate) dnssec_policy: Option<Parsed<PolicyNameKind>>,
    /// Dynamic updates (`config/update.rs`).
    pub(crate) update: Option<Vec<RawUpdateRule>>,
}

/// `zone-file-sync`: a duration, or 0 (at stop only).
pub(crate) struct SyncKind;

impl Kind for SyncKind {
    type Value = Duration;
    const EXPECTING: &'static str = "a duration like 60s, or 0 (at stop only)";
    fn parse(text: &str) -> Result<Duration, String> {
        match text.trim() {
            "0" | "0s" => Ok(Duration::ZERO),
            text => value::parse_duration(text),
        }
    }
}

/// One rule of a zone's `update:` as written (`config/update.rs`).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawUpdateRule {
    pub(crate) key: Option<String>,
    pub(crate) addresses: Option<Vec<String>>,
    pub(crate) types: Option<Vec<String>>,
    pub(crate) names: Option<Vec<String>>,
    pub(crate) owner: Option<String>,
    pub(crate) deny: Option<bool>,
}

/// `tcp:`, the RFC 7766 limits.
#[derive(Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub(crate) struct RawTcp {
    pub(crate) idle_timeout: Option<Parsed<DurationKind>>,
    pub(crate) initial_timeout: Option<Parsed<DurationKind>>,
    pub(crate) message_timeout: Option<Parsed<DurationKind>>,
    pub(crate) write_timeout: Option<Parsed<DurationKind>>,
    pub(crate) max_connections: Option<Parsed<Range<1, { value::MAX_TCP_CONNECTIONS }>>>,
    pub(crate) max_in_flight: Option<Parsed<Range<1, { value::MAX_IN_FLIGHT }>>>,
}

/// `cache:`, the per-core answer cache's bounds.
#[derive(Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawCache {
    pub(crate) entries: Option<Parsed<Range<0, { value::MAX_CACHE_ENTRIES }>>>,
    pub(crate) bytes: Option<Parsed<SizeKind>>,
}

/// `chaos:`, the deprecated spelling of the top-level `identity` and
/// `version` keys (the CH TXT answers).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawChaos {
    pub(crate) version: Option<Parsed<ChaosTextKind>>,
    pub(crate) identity: Option<Parsed<ChaosTextKind>>,
}

/// Parses the YAML text; errors name the key, the line and the column.
pub(crate) fn parse(text: &str) -> Result<RawConfig, serde_yaml::Error> {
    if text.trim().is_empty() {
        return Ok(RawConfig::default());
    }
    serde_yaml::from_str(text)
}

//----------- Parsed scalars -------------------------------------------------

/// A kind of scalar value: how to parse its text.
pub(crate) trait Kind {
    /// The parsed value.
    type Value;
    /// What the value should look like, for type errors.
    const EXPECTING: &'static str;
    /// Parses the scalar's text (numbers arrive as their decimal text).
    fn parse(text: &str) -> Result<Self::Value, String>;
}

/// A YAML scalar (string or number) of kind `K`, parsed inside the
/// deserializer.
pub(crate) struct Parsed<K: Kind>(pub(crate) K::Value);

impl<'de, K: Kind> Deserialize<'de> for Parsed<K> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(ScalarVisitor::<K>(PhantomData))
    }
}

struct ScalarVisitor<K>(PhantomData<K>);

impl<K: Kind> ScalarVisitor<K> {
    fn parse<E: de::Error>(text: &str) -> Result<Parsed<K>, E> {
        K::parse(text).map(Parsed).map_err(E::custom)
    }
}

impl<K: Kind> Visitor<'_> for ScalarVisitor<K> {
    type Value = Parsed<K>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str(K::EXPECTING)
    }

    fn visit_str<E: de::Error>(self, text: &str) -> Result<Self::Value, E> {
        Self::parse(text)
    }

    fn visit_u64<E: de::Error>(self, number: u64) -> Result<Self::Value, E> {
        Self::parse(&number.to_string())
    }

    fn visit_i64<E: de::Error>(self, number: i64) -> Result<Self::Value, E> {
        Self::parse(&number.to_string())
    }
}

/// A whole number in `MIN..=MAX`.
pub(crate) struct Range<const MIN: usize, const MAX: usize>;

impl<const MIN: usize, const MAX: usize> Kind for Range<MIN, MAX> {
    type Value = usize;
    const EXPECTING: &'static str = "a whole number";
    fn parse(text: &str) -> Result<usize, String> {
        let number: usize = text
            .trim()
            .parse()
            .map_err(|_| format!("bad number {text:?}; expected a whole number"))?;
        if !(MIN..=MAX).contains(&number) {
            return Err(format!("{number} is outside {MIN}..={MAX}"));
        }
        Ok(number)
    }
}

/// `10s`, `500ms`, `2m` or a bare number of seconds.
pub(crate) struct DurationKind;

impl Kind for DurationKind {
    type Value = Duration;
    const EXPECTING: &'static str = "a duration like 10s or 500ms";
    fn parse(text: &str) -> Result<Duration, String> {
        value::parse_duration(text)
    }
}

/// A byte count with an optional `K`, `M` or `G`.
pub(crate) struct SizeKind;

impl Kind for SizeKind {
    type Value = u64;
    const EXPECTING: &'static str = "a size like 65536 or 64M";
    fn parse(text: &str) -> Result<u64, String> {
        value::parse_size(text)
    }
}

/// A rate-limit window: a duration of whole seconds, 1 s to 1 h.
pub(crate) struct WindowKind;

impl Kind for WindowKind {
    type Value = u32;
    const EXPECTING: &'static str = "a duration in whole seconds like 15s";
    fn parse(text: &str) -> Result<u32, String> {
        value::parse_window(text)
    }
}

/// An NSID (RFC 5001): text, or `hex:` and hexadecimal digits.
pub(crate) struct NsidKind;

impl Kind for NsidKind {
    type Value = tern_authority::nsid::Nsid;
    const EXPECTING: &'static str = "a string, or hex: and hexadecimal digits";
    fn parse(text: &str) -> Result<Self::Value, String> {
        value::parse_nsid(text)
    }
}

/// A cookie secret: 32 hexadecimal digits (16 octets).
pub(crate) struct SecretKind;

impl Kind for SecretKind {
    type Value = [u8; 16];
    const EXPECTING: &'static str = "32 hexadecimal digits";
    fn parse(text: &str) -> Result<[u8; 16], String> {
        value::parse_secret(text)
    }
}

/// `auto`, `io-uring` or `legacy`.
pub(crate) struct DriverKind;

impl Kind for DriverKind {
    type Value = Driver;
    const EXPECTING: &'static str = "auto, io-uring or legacy";
    fn parse(text: &str) -> Result<Driver, String> {
        value::parse_driver(text)
    }
}

/// `error`, `warn`, `info` or `debug`.
pub(crate) struct LogLevelKind;

impl Kind for LogLevelKind {
    type Value = log::LevelFilter;
    const EXPECTING: &'static str = "error, warn, info or debug";
    fn parse(text: &str) -> Result<log::LevelFilter, String> {
        value::parse_log_level(text)
    }
}

/// An `ADDR:PORT` socket address; IPv6 in brackets.
pub(crate) struct AddressKind;

impl Kind for AddressKind {
    type Value = SocketAddr;
    const EXPECTING: &'static str = "an address like 127.0.0.1:53 or \"[::1]:53\"";
    fn parse(text: &str) -> Result<SocketAddr, String> {
        text.trim()
            .parse()
            .map_err(|_| format!("bad address {text:?}; expected 127.0.0.1:53 or \"[::1]:53\""))
    }
}

/// An address prefix: `10.0.0.0/8`, `::1/128` or a bare address.
pub(crate) struct CidrKind;

impl Kind for CidrKind {
    type Value = tern_server::Cidr;
    const EXPECTING: &'static str = "an address prefix like 127.0.0.0/8 or ::1/128";
    fn parse(text: &str) -> Result<tern_server::Cidr, String> {
        tern_server::Cidr::parse(text).ok_or_else(|| {
            format!("bad address prefix {text:?}; expected 127.0.0.0/8, ::1/128 or an address")
        })
    }
}

/// `fastest`, `round-robin` or `race`.
pub(crate) struct PolicyKind;

impl Kind for PolicyKind {
    type Value = tern_server::Policy;
    const EXPECTING: &'static str = "fastest, round-robin or race";
    fn parse(text: &str) -> Result<tern_server::Policy, String> {
        match text {
            "fastest" => Ok(tern_server::Policy::Fastest),
            "round-robin" => Ok(tern_server::Policy::RoundRobin),
            "race" => Ok(tern_server::Policy::Race),
            _ => Err(format!(
                "unknown policy {text:?}; expected fastest, round-robin or race"
            )),
        }
    }
}

/// A zone name, checked as a domain name.
pub(crate) struct OriginKind;

impl Kind for OriginKind {
    type Value = String;
    const EXPECTING: &'static str = "a zone name like example.com";
    fn parse(text: &str) -> Result<String, String> {
        tern_zones::load::parse_origin(text)?;
        Ok(text.to_string())
    }
}

/// A TSIG key's name: a domain name, absolute with or without the final
/// dot (`transfer-key` is `transfer-key.`), kept lowercased.
pub(crate) struct KeyNameKind;

impl Kind for KeyNameKind {
    type Value = tern_wire::name::NameBuf;
    const EXPECTING: &'static str = "a key name like transfer-key";
    fn parse(text: &str) -> Result<tern_wire::name::NameBuf, String> {
        let mut name =
            tern_wire::name::NameBuf::from_text(text.as_bytes(), Some(tern_wire::name::Name::ROOT))
                .map_err(|e| format!("bad key name {text:?}: {e}"))?;
        name.make_lowercase();
        Ok(name)
    }
}

/// `hmac-sha256`, `hmac-sha384`, `hmac-sha512` or `hmac-sha1`.
pub(crate) struct AlgorithmKind;

impl Kind for AlgorithmKind {
    type Value = tern_xfr::tsig::Algorithm;
    const EXPECTING: &'static str = "hmac-sha256, hmac-sha384, hmac-sha512, hmac-sha1 or hmac-md5";
    fn parse(text: &str) -> Result<tern_xfr::tsig::Algorithm, String> {
        tern_xfr::tsig::Algorithm::from_config_name(text).ok_or_else(|| {
            format!(
                "unknown algorithm {text:?}; expected hmac-sha256, hmac-sha384, hmac-sha512, hmac-sha1 or hmac-md5"
            )
        })
    }
}

/// A TSIG secret in base64 (as `tsig-keygen` and `keymgr -t` print it).
pub(crate) struct Base64Kind;

impl Kind for Base64Kind {
    type Value = Vec<u8>;
    const EXPECTING: &'static str = "a base64 secret";
    fn parse(text: &str) -> Result<Vec<u8>, String> {
        let secret = data_encoding::BASE64
            .decode(text.trim().as_bytes())
            .map_err(|_| "bad secret: not base64".to_string())?;
        if secret.is_empty() {
            return Err("bad secret: empty".to_string());
        }
        Ok(secret)
    }
}

/// A DNSSEC policy's name: 1 to 64 letters, digits, `-`, `_` and `.`.
pub(crate) struct PolicyNameKind;

impl Kind for PolicyNameKind {
    type Value = String;
    const EXPECTING: &'static str = "a policy name like default";
    fn parse(text: &str) -> Result<String, String> {
        value::parse_policy_name(text)
    }
}

/// `ecdsap256sha256`, `ed25519` or `rsasha256`.
pub(crate) struct DnssecAlgorithmKind;

impl Kind for DnssecAlgorithmKind {
    type Value = tern_dnssec::Algorithm;
    const EXPECTING: &'static str = "ecdsap256sha256, ed25519 or rsasha256";
    fn parse(text: &str) -> Result<Self::Value, String> {
        value::parse_dnssec_algorithm(text)
    }
}

/// An RSA modulus in bits, 2048 to 4096.
pub(crate) struct KeySizeKind;

impl Kind for KeySizeKind {
    type Value = usize;
    const EXPECTING: &'static str = "a key size in bits like 2048";
    fn parse(text: &str) -> Result<usize, String> {
        value::parse_key_size(text)
    }
}

/// `csk` or `ksk-zsk`.
pub(crate) struct KeySchemeKind;

impl Kind for KeySchemeKind {
    type Value = tern_zones::keys::KeyScheme;
    const EXPECTING: &'static str = "csk or ksk-zsk";
    fn parse(text: &str) -> Result<Self::Value, String> {
        match text {
            "csk" => Ok(tern_zones::keys::KeyScheme::Csk),
            "ksk-zsk" => Ok(tern_zones::keys::KeyScheme::KskZsk),
            _ => Err(format!("unknown keys {text:?}; expected csk or ksk-zsk")),
        }
    }
}

/// `none`, `rollover` or `always`.
pub(crate) struct CdsKind;

impl Kind for CdsKind {
    type Value = tern_zones::signing::CdsCdnskey;
    const EXPECTING: &'static str = "none, rollover or always";
    fn parse(text: &str) -> Result<Self::Value, String> {
        use tern_zones::signing::CdsCdnskey;
        match text {
            "none" => Ok(CdsCdnskey::None),
            "rollover" => Ok(CdsCdnskey::Rollover),
            "always" => Ok(CdsCdnskey::Always),
            _ => Err(format!(
                "unknown cds-cdnskey {text:?}; expected none, rollover or always"
            )),
        }
    }
}

/// A policy's `serial-policy` (Knot's names).
pub(crate) struct SerialPolicyKind;

impl Kind for SerialPolicyKind {
    type Value = tern_zones::signing::SerialPolicy;
    const EXPECTING: &'static str = "increment, unixtime or dateserial";
    fn parse(text: &str) -> Result<Self::Value, String> {
        use tern_zones::signing::SerialPolicy;
        match text {
            "increment" => Ok(SerialPolicy::Increment),
            "unixtime" => Ok(SerialPolicy::UnixTime),
            "dateserial" => Ok(SerialPolicy::DateSerial),
            _ => Err(format!(
                "unknown serial-policy {text:?}; expected increment, unixtime or dateserial"
            )),
        }
    }
}

/// A key or signature lifetime: `14d`, `2w`, `12h`, `30m`, `90s` or a
/// bare number of seconds; `0` is allowed (never, where it means that).
pub(crate) struct LifetimeKind;

impl Kind for LifetimeKind {
    type Value = u64;
    const EXPECTING: &'static str = "a lifetime like 14d or 12h";
    fn parse(text: &str) -> Result<u64, String> {
        value::parse_lifetime(text)
    }
}

/// A TTL: a lifetime of at most 2^31 - 1 seconds (RFC 2181 section 8).
pub(crate) struct TtlKind;

impl Kind for TtlKind {
    type Value = u32;
    const EXPECTING: &'static str = "a TTL like 3600 or 1h";
    fn parse(text: &str) -> Result<u32, String> {
        let seconds = value::parse_lifetime(text)?;
        u32::try_from(seconds)
            .ok()
            .filter(|&ttl| ttl <= value::MAX_TTL)
            .ok_or_else(|| format!("TTL {text:?} is above {}", value::MAX_TTL))
    }
}

/// A non-empty path.
pub(crate) struct PathKind;

impl Kind for PathKind {
    type Value = String;
    const EXPECTING: &'static str = "a path";
    fn parse(text: &str) -> Result<String, String> {
        if text.is_empty() || text.contains('\0') {
            return Err(format!("bad path {text:?}"));
        }
        Ok(text.to_string())
    }
}

/// A CHAOS answer: one TXT character-string.
pub(crate) struct ChaosTextKind;

/// dnstap's identity or version: a string of at most
/// [`tern_dnstap::MAX_IDENTITY`] octets (empty: left out).
pub(crate) struct DnstapTextKind;

impl Kind for DnstapTextKind {
    type Value = String;
    const EXPECTING: &'static str = "a string";
    fn parse(text: &str) -> Result<String, String> {
        let max = tern_dnstap::MAX_IDENTITY;
        if text.len() > max {
            return Err(format!("{} bytes is longer than {max}", text.len()));
        }
        Ok(text.to_string())
    }
}

impl Kind for ChaosTextKind {
    type Value = String;
    const EXPECTING: &'static str = "a string";
    fn parse(text: &str) -> Result<String, String> {
        if text.len() > MAX_CHAOS_TEXT {
            return Err(format!(
                "{} bytes is longer than a TXT string may be ({MAX_CHAOS_TEXT})",
                text.len()
            ));
        }
        Ok(text.to_string())
    }
}

//----------- Listen ---------------------------------------------------------

/// `listen:`, a non-empty list of distinct addresses.
pub(crate) struct Listen(pub(crate) Vec<SocketAddr>);

impl<'de> Deserialize<'de> for Listen {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_seq(ListenVisitor)
    }
}

struct ListenVisitor;

impl<'de> Visitor<'de> for ListenVisitor {
    type Value = Listen;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a list of addresses like [\"127.0.0.1:53\", \"[::1]:53\"]")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Listen, A::Error> {
        let mut addresses = Vec::new();
        while let Some(Parsed(address)) = seq.next_element::<Parsed<AddressKind>>()? {
            if addresses.len() == MAX_LISTEN {
                return Err(de::Error::custom(format!(
                    "more than {MAX_LISTEN} addresses"
                )));
            }
            if addresses.contains(&address) {
                return Err(de::Error::custom(format!("{address} is listed twice")));
            }
            addresses.push(address);
        }
        if addresses.is_empty() {
            return Err(de::Error::custom(
                "the list is empty; name at least one address",
            ));
        }
        Ok(Listen(addresses))
    }
}

//----------- Cores ----------------------------------------------------------

/// `cores:`, a list of CPU ids, a list string like `"0,2-3"`, or `all`.
pub(crate) struct Cores(pub(crate) Vec<usize>);

impl<'de> Deserialize<'de> for Cores {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(CoresVisitor)
    }
}

struct CoresVisitor;

impl<'de> Visitor<'de> for CoresVisitor {
    type Value = Cores;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a list of CPU ids like [0, 2, 3], a string like \"0,2-3\", or all")
    }

    fn visit_str<E: de::Error>(self, text: &str) -> Result<Cores, E> {
        value::parse_cores(text).map(Cores).map_err(E::custom)
    }

    fn visit_u64<E: de::Error>(self, cpu: u64) -> Result<Cores, E> {
        self.visit_str(&cpu.to_string())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Cores, A::Error> {
        let mut cores = Vec::new();
        while let Some(cpu) = seq.next_element::<usize>()? {
            if cores.len() > value::MAX_CPU_ID {
                return Err(de::Error::custom("more CPUs than the system can name"));
            }
            cores.push(cpu);
        }
        value::normalize_cores(cores)
            .map(Cores)
            .map_err(de::Error::custom)
    }
}

//=========== Tests ==========================================================

#[cfg(test)]
mod tests {
    use super::*;

    fn error(text: &str) -> String {
        match parse(text) {
            Ok(_) => panic!("accepted {text:?}"),
            Err(err) => err.to_string(),
        }
    }

    #[test]
    fn value_errors_carry_the_key_and_line() {
        let err = error("listen: ['127.0.0.1:53']\ntcp:\n  idle-timeout: 10x\n");
        assert!(
            err.contains("tcp.idle-timeout") && err.contains("line 3"),
            "{err}"
        );
        let err = error("udp-size: 100\n");
        assert!(
            err.contains("udp-size") && err.contains("512..=65535"),
            "{err}"
        );
        let err = error("\n\nlisten: ['127.0.0.1:53', 'localhost']\n");
        assert!(
            err.contains("bad address") && err.contains("line 3"),
            "{err}"
        );
        let err = error("listen: ['127.0.0.1:53', '127.0.0.1:53']\n");
        assert!(
            err.contains("listed twice") && err.contains("line 1"),
            "{err}"
        );
        let err = error("listen: []\n");
        assert!(err.contains("empty"), "{err}");
        let err = error("cores: [0, 5000]\n");
        assert!(err.contains("cores") && err.contains("line 1"), "{err}");
        let err = error("cores: [-1]\n");
        assert!(err.contains("line 1"), "{err}");
        let err = error("zones:\n  list:\n    - origin: 'bad..name'\n      file: x\n");
        assert!(err.contains("origin") && err.contains("line 3"), "{err}");
        let err = error("cache:\n  bytes: 12X\n");
        assert!(
            err.contains("cache.bytes") && err.contains("line 2"),
            "{err}"
        );
        let err = error("log-level: loud\n");
        assert!(err.contains("log-level") && err.contains("line 1"), "{err}");
        let err = error("driver: [auto]\n");
        assert!(err.contains("driver") && err.contains("line 1"), "{err}");
        let err = error(&format!("chaos:\n  version: {}\n", "v".repeat(256)));
        assert!(
            err.contains("chaos.version") && err.contains("line 2"),
            "{err}"
        );
        let err = error(&format!("log-level: info\nidentity: {}\n", "i".repeat(256)));
        assert!(err.contains("identity") && err.contains("line 2"), "{err}");
        let err = error("rate-limit:\n  slip: 11\n");
        assert!(
            err.contains("rate-limit.slip") && err.contains("line 2") && err.contains("0..=10"),
            "{err}"
        );
        let err = error("rate-limit:\n  responses-per-second: 1001\n");
        assert!(
            err.contains("rate-limit.responses-per-second") && err.contains("line 2"),
            "{err}"
        );
        let err = error("rate-limit:\n  window: 1500ms\n");
        assert!(
            err.contains("rate-limit.window") && err.contains("whole number of seconds"),
            "{err}"
        );
        let err = error("rate-limit:\n  window: 2h\n");
        assert!(err.contains("rate-limit.window"), "{err}");
        let err = error("rate-limit:\n  ipv4-prefix-length: 33\n");
        assert!(err.contains("rate-limit.ipv4-prefix-length"), "{err}");
        let err = error("rate-limit:\n  ipv6-prefix-length: 129\n");
        assert!(err.contains("rate-limit.ipv6-prefix-length"), "{err}");
        let err = error("rate-limit:\n  table-size: 16\n");
        assert!(err.contains("rate-limit.table-size"), "{err}");
        let err = error("\nrate-limit:\n  exempt: [10.0.0.0/33]\n");
        assert!(
            err.contains("rate-limit.exempt") && err.contains("line 3"),
            "{err}"
        );
        let err = error("rate-limit:\n  bogus: 1\n");
        assert!(err.contains("bogus") && err.contains("line 2"), "{err}");
        let err = error("cookies:\n  secret: 0123\n");
        assert!(
            err.contains("cookies.secret") && err.contains("line 2"),
            "{err}"
        );
        let err = error("cookies:\n  enabled: maybe\n");
        assert!(err.contains("cookies.enabled"), "{err}");
        let err = error("tcp:\n  max-in-flight: 0\n");
        assert!(
            err.contains("tcp.max-in-flight") && err.contains("line 2"),
            "{err}"
        );
    }

    #[test]
    fn unknown_keys_are_errors_with_the_line() {
        let err = error("listen: ['127.0.0.1:53']\nbogus: 1\n");
        assert!(err.contains("bogus") && err.contains("line 2"), "{err}");
        let err = error("tcp:\n  idle: 10s\n");
        assert!(err.contains("idle") && err.contains("line 2"), "{err}");
    }

    #[test]
    fn scalars_accept_numbers_and_strings() {
        let raw = parse(
            "cores: 1\nudp-size: '1400'\ntcp: {idle-timeout: 3, max-connections: 8}\n\
             cache: {entries: 10, bytes: 64M}\n",
        )
        .unwrap();
        assert_eq!(raw.cores.unwrap().0, [1]);
        assert_eq!(raw.udp_size.unwrap().0, 1400);
        let tcp = raw.tcp.unwrap();
        assert_eq!(tcp.idle_timeout.unwrap().0, Duration::from_secs(3));
        assert_eq!(tcp.max_connections.unwrap().0, 8);
        let cache = raw.cache.unwrap();
        assert_eq!(cache.entries.unwrap().0, 10);
        assert_eq!(cache.bytes.unwrap().0, 64 << 20);
    }
}
