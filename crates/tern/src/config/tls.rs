//! The `tls:` section: DNS over TLS listeners and the server's
//! certificate (docs/decisions/0017).
//!
//! ```yaml
//! tls:
//!   listen: ["127.0.0.1:853"]
//!   certificate: /etc/tern/tls/cert.pem   # absent: a self-signed key in the state directory
//!   key: /etc/tern/tls/key.pem
//!   client-ca: /etc/tern/tls/clients.pem  # for mutual TLS on zone transfers
//! ```

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use anyhow::bail;

use super::raw::{RawTls, MAX_LISTEN};

/// The `tls:` section, checked.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct TlsSection {
    /// Addresses served DNS over TLS (empty: none).
    pub(crate) listen: Vec<SocketAddr>,
    /// The PEM certificate chain and key; `None`: a self-signed pair kept
    /// in the state directory.
    pub(crate) files: Option<(PathBuf, PathBuf)>,
    /// Trust anchors of client certificates (mutual TLS on transfers).
    pub(crate) client_ca: Option<PathBuf>,
}

/// The `tls:` section, paths relative to `base`: `certificate` and `key`
/// come together.
pub(super) fn tls_section(raw: RawTls, base: &Path) -> anyhow::Result<TlsSection> {
    let listen = raw.listen.map(|listen| listen.0).unwrap_or_default();
    let files = match (raw.certificate, raw.key) {
        (Some(certificate), Some(key)) => Some((base.join(certificate.0), base.join(key.0))),
        (None, None) => None,
        (Some(_), None) => bail!("tls.key: name the certificate's private key too"),
        (None, Some(_)) => bail!("tls.certificate: name the key's certificate too"),
    };
    Ok(TlsSection {
        listen,
        files,
        client_ca: raw.client_ca.map(|path| base.join(path.0)),
    })
}

/// The checks that need the rest of the configuration: a TLS address is
/// not also a plain or proxied one (its TCP port would be bound twice),
/// and the three lists stay within [`MAX_LISTEN`].
pub(super) fn check(
    tls: Option<&TlsSection>,
    listen: &[SocketAddr],
    proxied: &[SocketAddr],
) -> anyhow::Result<()> {
    let Some(tls) = tls else {
        return Ok(());
    };
    if let Some(both) = tls
        .listen
        .iter()
        .find(|address| listen.contains(address) || proxied.contains(address))
    {
        bail!("tls.listen: {both} is also in listen or proxy.listen; TLS needs its own port");
    }
    if tls.listen.len() + listen.len() + proxied.len() > MAX_LISTEN {
        bail!(
            "tls.listen: listen, proxy.listen and tls.listen name more than {MAX_LISTEN} addresses"
        );
    }
    Ok(())
}

//=========== Tests ==========================================================

#[cfg(test)]
mod tests {
    use super::*;

    fn section(text: &str) -> anyhow::Result<TlsSection> {
        let raw: super::super::raw::RawConfig = super::super::raw::parse(text)?;
        tls_section(raw.tls.expect("a tls section"), Path::new("/etc/tern"))
    }

    /// The issue's example reads; paths are relative to the file's
    /// directory; certificate and key come together; a TLS address may
    /// not be a plain or proxied one too.
    #[test]
    fn tls_section_reads_and_checks() {
        let tls = section(
            "tls:\n  listen: ['127.0.0.1:853']\n  certificate: tls/cert.pem\n  key: tls/key.pem\n  \
             client-ca: /etc/clients.pem\n",
        )
        .unwrap();
        assert_eq!(tls.listen, vec!["127.0.0.1:853".parse().unwrap()]);
        assert_eq!(
            tls.files,
            Some((
                PathBuf::from("/etc/tern/tls/cert.pem"),
                PathBuf::from("/etc/tern/tls/key.pem")
            ))
        );
        assert_eq!(tls.client_ca, Some(PathBuf::from("/etc/clients.pem")));
        let bare = section("tls:\n  listen: ['127.0.0.1:853']\n").unwrap();
        assert_eq!(bare.files, None, "self-signed");
        for (text, error) in [
            ("tls:\n  certificate: c.pem\n", "tls.key"),
            ("tls:\n  key: k.pem\n", "tls.certificate"),
        ] {
            let err = section(text).unwrap_err();
            assert!(format!("{err:#}").contains(error), "{text}: {err:#}");
        }
        assert!(super::super::raw::parse("tls:\n  bogus: 1\n").is_err());
        let address: SocketAddr = "127.0.0.1:853".parse().unwrap();
        let err = check(Some(&bare), &[address], &[]).unwrap_err();
        assert!(err.to_string().contains("tls.listen"), "{err}");
        assert!(check(Some(&bare), &[], &[address]).is_err());
        assert!(check(Some(&bare), &["127.0.0.1:53".parse().unwrap()], &[]).is_ok());
        assert!(check(None, &[address], &[]).is_ok());
    }
}
