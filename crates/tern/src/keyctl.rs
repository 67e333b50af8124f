//! `tern keys ...` (issue 24; docs/config.md, "Key rollovers"): a signed
//! zone's keys over the control socket. The client side is a clap
//! subcommand turned into one command line (`keys list example.com.`);
//! the server side ([`command`]) acts on the keys of the zones served,
//! where their last signing left them ([`tern_zones::rollover::ZoneKeys`]),
//! and asks for the zone to be signed again when their state changed.

use std::fmt::Write as _;

use tern_dnssec::KeyRole;
use tern_wire::name::LowerNameBuf;
use tern_zones::keys;
use tern_zones::owner::Zones;
use tern_zones::rollover::{self, DsSeen, ZoneKeys};

/// `tern keys`: what to do with a signed zone's keys.
#[derive(clap::Subcommand, Debug)]
pub(crate) enum KeysCommand {
    /// Print each key of the signed zones (or of ZONE): role, algorithm,
    /// tag, state and the time of its next step.
    List {
        /// Only this zone.
        zone: Option<String>,
    },
    /// Start a rollover of the zone's ZSK, KSK or CSK now.
    Rollover {
        /// The zone.
        zone: String,
        /// zsk, ksk or csk.
        role: String,
    },
    /// Print the DS records the parent should have for the zone.
    Ds {
        /// The zone.
        zone: String,
    },
    /// Say that the parent's DS set includes the key KEYTAG: a KSK or CSK
    /// rollover goes on.
    DsSeen {
        /// The zone.
        zone: String,
        /// The key's tag.
        keytag: u16,
    },
    /// Generate a standby key of ROLE, published by the next rollover.
    Generate {
        /// The zone.
        zone: String,
        /// zsk, ksk or csk.
        role: String,
    },
    /// Import existing keys into a signed zone's key directory: BIND's
    /// `K<zone>+<alg>+<tag>.key/.private/.state` files or PKCS#8 PEM files,
    /// each keeping its DNSKEY and key tag; refuses a tag the zone has.
    /// The server signs with them from the zone's next load (`tern reload
    /// ZONE`). Works on the configuration's state directory, not through
    /// the control socket.
    Import(crate::keys_import::ImportArgs),
}

impl KeysCommand {
    /// The control socket's command line (`import` runs in this process
    /// and sends none: its line is never used).
    pub(crate) fn line(&self) -> String {
        match self {
            KeysCommand::List { zone: None } => "keys list".to_string(),
            KeysCommand::List { zone: Some(zone) } => format!("keys list {zone}"),
            KeysCommand::Rollover { zone, role } => format!("keys rollover {zone} {role}"),
            KeysCommand::Ds { zone } => format!("keys ds {zone}"),
            KeysCommand::DsSeen { zone, keytag } => format!("keys ds-seen {zone} {keytag}"),
            KeysCommand::Generate { zone, role } => format!("keys generate {zone} {role}"),
            KeysCommand::Import(_) => "keys import".to_string(),
        }
    }
}

/// The control socket's `keys ...` commands (the line whole); the reply.
/// `resign` queues a zone to be signed again (the control socket's
/// reload thread: `Reloads::resign`).
pub(crate) fn command(zones: &Zones, resign: &dyn Fn(LowerNameBuf), line: &str) -> String {
    let words: Vec<&str> = line.split_whitespace().take(5).collect();
    let outcome = match words[..] {
        ["keys", "list"] => Ok(list(zones, None)),
        ["keys", "list", zone] => signed(zones, zone).map(|keys| list(zones, Some(&keys))),
        ["keys", "rollover", zone, role] => {
            signed(zones, zone).and_then(|keys| rollover_now(resign, &keys, role))
        }
        ["keys", "ds", zone] => signed(zones, zone).and_then(|keys| ds(&keys)),
        ["keys", "ds-seen", zone, tag] => {
            signed(zones, zone).and_then(|keys| ds_seen(resign, &keys, tag))
        }
        ["keys", "generate", zone, role] => signed(zones, zone).and_then(|keys| {
            let role = parse_role(role)?;
            let tag = rollover::generate_standby(&keys.dir, &keys.policy, role, now())?;
            Ok(format!(
                "{}: standby {} key {tag} generated\n",
                keys.origin,
                keys::role_text(role)
            ))
        }),
        _ => Err(
            "keys: expected list [ZONE], rollover ZONE ROLE, ds ZONE, ds-seen ZONE KEYTAG or \
             generate ZONE ROLE"
                .to_string(),
        ),
    };
    outcome.unwrap_or_else(|err| format!("error: {err}\n"))
}

fn now() -> u64 {
    tern_zones::unix_time()
}

/// The keys of the signed zone named `text`.
fn signed(zones: &Zones, text: &str) -> Result<std::sync::Arc<ZoneKeys>, String> {
    let origin = tern_zones::load::parse_origin(text)?;
    let origin = LowerNameBuf::from_name(origin.as_name());
    zones
        .zone_keys(origin.as_bytes())
        .ok_or_else(|| format!("{} is not a signed zone served", origin.as_name()))
}

fn parse_role(text: &str) -> Result<KeyRole, String> {
    keys::role_by_text(&text.to_ascii_lowercase())
        .ok_or_else(|| format!("unknown role {text:?}; expected zsk, ksk or csk"))
}

/// A time as `T (in N s)` or `T (N s ago)`.
fn when(time: u64, now: u64) -> String {
    if time >= now {
        format!("{time} (in {} s)", time - now)
    } else {
        format!("{time} ({} s ago)", now - time)
    }
}

/// `keys list [ZONE]`: a line per zone, then one per key.
fn list(zones: &Zones, only: Option<&ZoneKeys>) -> String {
    let all = match only {
        Some(keys) => vec![std::sync::Arc::new(keys.clone())],
        None => zones.all_zone_keys(),
    };
    let now = now();
    let mut text = String::new();
    for zone in all {
        let stored = {
            let _lock = keys::lock();
            keys::read_keys(&zone.dir)
        };
        let stored = match stored {
            Ok(stored) => stored,
            Err(err) => {
                let _ = writeln!(text, "{} error {err}", zone.origin);
                continue;
            }
        };
        let rolling = rollover::describe_rollover(&stored, now);
        let _ = writeln!(
            text,
            "{} policy {} rollover {} next-key-event {}",
            zone.origin,
            zone.policy.name,
            rolling.as_deref().unwrap_or("none"),
            zone.next_event
                .map_or_else(|| "none".to_string(), |at| when(at, now))
        );
        for key in &stored {
            let meta = &key.meta;
            let (state, next) = rollover::describe(meta, &zone.policy, now);
            let _ = writeln!(
                text,
                "  {} {} {} {state} next: {next}",
                keys::role_text(meta.role),
                keys::algorithm_name(meta.algorithm),
                meta.key_tag,
            );
        }
    }
    if text.is_empty() {
        text.push_str("no signed zone\n");
    }
    text
}

/// `keys rollover ZONE ROLE`.
fn rollover_now(
    resign: &dyn Fn(LowerNameBuf),
    zone: &ZoneKeys,
    role: &str,
) -> Result<String, String> {
    let role = parse_role(role)?;
    let (new, old) = rollover::start(&zone.dir, &zone.policy, role, now())?;
    resign(LowerNameBuf::from_name(zone.origin.as_name()));
    Ok(format!(
        "{}: {} rollover started: key {new} replaces key {old}\n",
        zone.origin,
        keys::role_text(role)
    ))
}

/// `keys ds ZONE`: the DS records (SHA-256) in zone-file form.
fn ds(zone: &ZoneKeys) -> Result<String, String> {
    let stored = {
        let _lock = keys::lock();
        keys::read_keys(&zone.dir)?
    };
    let mut text = String::new();
    for key in rollover::ds_keys(&stored, now()) {
        let rdata = key.ds_rdata(zone.origin.as_name());
        let (head, digest) = rdata.split_at(4.min(rdata.len()));
        if head.len() < 4 {
            continue;
        }
        let _ = writeln!(
            text,
            "{} IN DS {} {} {} {}",
            zone.origin,
            u16::from_be_bytes([head[0], head[1]]),
            head[2],
            head[3],
            data_encoding::HEXUPPER.encode(digest)
        );
    }
    Ok(text)
}

/// `keys ds-seen ZONE KEYTAG`.
fn ds_seen(resign: &dyn Fn(LowerNameBuf), zone: &ZoneKeys, tag: &str) -> Result<String, String> {
    let tag: u16 = tag
        .parse()
        .map_err(|_| format!("bad key tag {tag:?}; expected 0..65535"))?;
    match rollover::ds_seen(&zone.dir, tag, None, now())? {
        DsSeen::Recorded => {
            resign(LowerNameBuf::from_name(zone.origin.as_name()));
            Ok(format!(
                "{}: key {tag}'s DS recorded as seen at the parent\n",
                zone.origin
            ))
        }
        DsSeen::Already => Ok(format!("{}: key {tag}'s DS was seen before\n", zone.origin)),
    }
}

/// For `zone-status`: the signed zone's rollover and next key event, as
/// ` rollover R next-key-event T`, or nothing for a zone not signed.
pub(crate) fn status(zones: &Zones, origin: &[u8]) -> String {
    let Some(zone) = zones.zone_keys(origin) else {
        return String::new();
    };
    let stored = {
        let _lock = keys::lock();
        keys::read_keys(&zone.dir)
    };
    let rolling = stored
        .ok()
        .and_then(|stored| rollover::describe_rollover(&stored, now()));
    format!(
        " rollover {} next-key-event {}",
        rolling.as_deref().unwrap_or("none"),
        zone.next_event
            .map_or_else(|| "none".to_string(), |at| at.to_string())
    )
}
