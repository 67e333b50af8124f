//! A signed zone's policy, one of `dnssec.policies` (issue 24; docs/config.md,
//! docs/decisions/0014): the types both the signer ([`crate::signing`]) and
//! the rollovers ([`crate::rollover`]) read, in a module that imports
//! neither.

use std::net::SocketAddr;

use tern_dnssec::Algorithm;

use crate::keys::KeyScheme;

//----------- Policy ---------------------------------------------------------

/// The default `rrsig-jitter`: two days, so that the signatures of a zone
/// signed at one moment are refreshed over two days rather than on one.
pub const DEFAULT_RRSIG_JITTER: u64 = 2 * 86_400;

/// The default `parent-ds-timeout`: a week, a parent (a registry, a
/// registrar) taking longer than that to publish a DS is stuck.
pub const DEFAULT_PARENT_DS_TIMEOUT: u64 = 7 * 86_400;

/// When CDS and CDNSKEY records are published (RFC 7344, RFC 8078).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum CdsCdnskey {
    /// Never.
    None,
    /// While a KSK or CSK rollover waits for the parent.
    #[default]
    Rollover,
    /// Always, for the active KSKs.
    Always,
}

/// NSEC3 in a policy: the salt is drawn when a zone is first signed and
/// kept while it is signed again from its previous version (its rotation
/// is a later slice).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Nsec3Policy {
    /// Further iterations (RFC 9276: 0).
    pub iterations: u16,
    /// Octets of random salt (RFC 9276: 0).
    pub salt_length: u8,
    /// Whether insecure delegations are left out of the chain.
    pub opt_out: bool,
}

/// Where the parent's DS set is checked for a new KSK or CSK
/// ([`crate::parent`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ParentCheck {
    /// The parent's servers queried for the DS set.
    pub servers: Vec<SocketAddr>,
    /// How often they are queried, in seconds.
    pub check_interval: u64,
}

/// One policy of `dnssec.policies`; times are in seconds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Policy {
    /// Its name, which zones give as `dnssec-policy`.
    pub name: String,
    /// The keys' algorithm.
    pub algorithm: Algorithm,
    /// The modulus of RSA keys generated, in bits (`key-size`; not looked
    /// at for the other algorithms).
    pub key_size: usize,
    /// CSK, or KSK and ZSK.
    pub keys: KeyScheme,
    /// The ZSK's lifetime from its activation; 0: never rolled.
    pub zsk_lifetime: u64,
    /// The KSK's (or CSK's) lifetime from its activation; 0: never
    /// rolled.
    pub ksk_lifetime: u64,
    /// How long a change of the zone takes to reach every secondary, and
    /// the parent's change every one of its servers (RFC 7583's Dprp):
    /// added to each wait of a rollover.
    pub propagation_delay: u64,
    /// The TTL of the parent's DS RRset, waited for after a DS is seen by
    /// hand (`tern keys ds-seen`; the parent check reads it).
    pub parent_ds_ttl: u64,
    /// How long a KSK or CSK rollover may wait for the parent's DS before
    /// it is reported loudly (logged at every signing, shown in `tern
    /// zone-status`, a metric); 0: never. It keeps waiting either way
    /// (docs/decisions/0014, "Signing status, failures and the parent
    /// wait").
    pub parent_ds_timeout: u64,
    /// How long a signature is valid from its signing.
    pub rrsig_lifetime: u64,
    /// How long before expiry a signature is made anew, at the latest.
    pub rrsig_refresh: u64,
    /// How much earlier still, at most, spread over the signatures so
    /// that they are refreshed in batches over this time rather than all
    /// at once ([`tern_dnssec::Refresh`]).
    pub rrsig_jitter: u64,
    /// NSEC3, or NSEC when `None`.
    pub nsec3: Option<Nsec3Policy>,
    /// The DNSKEY RRset's TTL; `None`: the SOA's.
    pub dnskey_ttl: Option<u32>,
    /// CDS and CDNSKEY publication.
    pub cds_cdnskey: CdsCdnskey,
    /// The parent's DS check; `None`: by hand only (`tern keys ds-seen`).
    pub parent: Option<ParentCheck>,
}

impl Policy {
    /// The defaults (as docs/config.md lists them) under `name`.
    pub fn new(name: String) -> Policy {
        Policy {
            name,
            algorithm: Algorithm::EcdsaP256Sha256,
            key_size: tern_dnssec::key::RSA_DEFAULT_BITS,
            keys: KeyScheme::Csk,
            zsk_lifetime: 30 * 86_400,
            ksk_lifetime: 0,
            propagation_delay: 3600,
            parent_ds_ttl: 86_400,
            parent_ds_timeout: DEFAULT_PARENT_DS_TIMEOUT,
            rrsig_lifetime: 14 * 86_400,
            rrsig_refresh: 7 * 86_400,
            rrsig_jitter: DEFAULT_RRSIG_JITTER,
            nsec3: None,
            dnskey_ttl: None,
            cds_cdnskey: CdsCdnskey::default(),
            parent: None,
        }
    }
}
