//! `tls:` of a `zones.secondary` or `zones.catalog` entry: transfers in
//! over TLS (RFC 9103; docs/decisions/0018).
//!
//! ```yaml
//! tls: {name: primary.example.net, ca: /etc/tern/tls/primary-ca.pem}
//! tls: {pin: "sha256/BASE64"}            # the primary's SPKI, as kdig +tls-pin
//! tls: {pin: "sha256/BASE64", fallback: plain, plain-port: 53}
//! ```

use std::path::Path;

use anyhow::{bail, Context};
use tern_zones::xot::{check_name, load_ca, parse_pin, XotAuth, XotConfig};

use super::raw::RawXot;

/// The default port asked over plain DNS with `fallback: plain`.
const DEFAULT_PLAIN_PORT: u16 = 53;

/// The longest `name`: a DNS name's text.
const MAX_NAME: usize = 253;

/// A `tls:` section checked: exactly one of `pin` and `ca`; `name` a DNS
/// name or an address rustls accepts; the `ca` file read now (relative to
/// `base`), so a bad one stops the start or the reload.
pub(super) fn xot_config(raw: RawXot, base: &Path) -> anyhow::Result<XotConfig> {
    if let Some(name) = &raw.name {
        if name.is_empty() || name.len() > MAX_NAME {
            bail!("name: {name:?} is not a DNS name");
        }
        check_name(name)
            .map_err(anyhow::Error::msg)
            .context("name")?;
    }
    let auth = match (raw.pin, raw.ca) {
        (Some(pin), None) => {
            XotAuth::Pin(parse_pin(&pin).map_err(anyhow::Error::msg).context("pin")?)
        }
        (None, Some(ca)) => {
            let path = base.join(ca.0);
            let anchors = load_ca(&path).map_err(anyhow::Error::msg).context("ca")?;
            XotAuth::Ca { path, anchors }
        }
        (Some(_), Some(_)) => bail!("name either pin or ca, not both"),
        (None, None) => bail!(
            "name how the primary is authenticated: pin (\"sha256/BASE64\" of its key) or ca \
             (a PEM file of trust anchors)"
        ),
    };
    let fallback_port = match raw.fallback.as_deref() {
        None | Some("none") => {
            if raw.plain_port.is_some() {
                bail!("plain-port is only used with fallback: plain");
            }
            None
        }
        Some("plain") => Some(
            raw.plain_port
                .map_or(DEFAULT_PLAIN_PORT, |port| port.0 as u16),
        ),
        Some(other) => bail!("fallback: {other:?}; expected none (the default) or plain"),
    };
    Ok(XotConfig {
        name: raw.name,
        auth,
        fallback_port,
    })
}
