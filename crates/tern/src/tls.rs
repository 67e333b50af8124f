//! DNS over TLS in the binary: the certificate read at start (or the
//! self-signed one made in the state directory), its pin logged, and the
//! certificate read again on `tern reload`. The TLS configuration itself
//! is `tern_server::tls::config`'s.

use std::sync::Arc;

use anyhow::Context;
use tern_server::tls::config::{self, Certificates, Identity, Source};

use crate::config::{Config, TlsSection};

/// The identity `section` names: its PEM files, or the self-signed pair
/// of the state directory (made there the first time).
fn identity(section: &TlsSection, config: &Config) -> anyhow::Result<Identity> {
    match &section.files {
        Some((certificate, key)) => {
            Identity::from_files(certificate, key).context("tls.certificate, tls.key")
        }
        None => Identity::self_signed(config.state_directory.as_deref(), &host_name())
            .context("tls: the self-signed certificate"),
    }
}

/// The server's TLS configuration for `config`'s `tls:` section, and the
/// certificates a reload replaces; `None` without the section.
pub(crate) fn start(
    config: &Config,
) -> anyhow::Result<Option<(tern_server::TlsConfig, Arc<Certificates>)>> {
    let Some(section) = &config.tls else {
        return Ok(None);
    };
    // Read now so that a broken file fails the start; mutual TLS is for
    // zone transfers, not DNS over TLS.
    if let Some(path) = &section.client_ca {
        config::client_roots(path).context("tls.client-ca")?;
    }
    let identity = identity(section, config)?;
    match &identity.source {
        Source::Ephemeral => log::warn!(
            "tls: no certificate and no state-directory: a self-signed key for this run only, \
             its pin changes at each start"
        ),
        Source::SelfSigned(path) => log::info!("tls: self-signed certificate {}", path.display()),
        Source::Files { certificate, .. } => {
            log::info!("tls: certificate {}", certificate.display())
        }
    }
    log::info!(
        "tls: pin-sha256 {} (DNS over TLS on {})",
        identity.pin,
        section
            .listen
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join(", ")
    );
    let certificates = Certificates::new(identity);
    let server = config::server_config(Arc::clone(&certificates), &[config::ALPN_DOT], None)
        .context("tls")?;
    let tls = tern_server::TlsConfig {
        listen: section.listen.clone(),
        server,
    };
    Ok(Some((tls, certificates)))
}

/// On reload: reads the certificate `next` names again and serves it to
/// new handshakes. A failure keeps the one served.
pub(crate) fn reload(certificates: &Certificates, next: &Config) {
    let Some(section) = &next.tls else {
        return;
    };
    match identity(section, next) {
        Ok(identity) => {
            let pin = identity.pin.clone();
            if pin != certificates.pin() || identity.source != certificates.current().source {
                log::info!("tls: new certificate served, pin-sha256 {pin}");
            }
            certificates.replace(identity);
        }
        Err(err) => log::error!("{err:#}; the certificate served is kept"),
    }
}

/// This host's name, for the self-signed certificate.
fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|name| name.trim().to_string())
        .filter(|name| !name.is_empty() && name.len() < 254)
        .unwrap_or_else(|| "localhost".to_string())
}
