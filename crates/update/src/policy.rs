//! Who may update what: a zone's list of update rules, in the spirit of
//! Knot's ACL (`key`, `address`, `update-type`, `update-owner`,
//! `update-owner-match`, `update-owner-name`, `deny`).
//!
//! A rule names who it is for ([`UpdateRule::key`], the TSIG key the
//! request was signed with, checked by the caller; and optionally
//! [`UpdateRule::addresses`], prefixes the client's address must fall in)
//! and what they may change ([`UpdateRule::types`] and
//! [`UpdateRule::owner`]). Each update record is decided on its own
//! ([`record_allowed`]): the first rule whose key, address, type and owner
//! all match it decides, allowing it unless the rule is a `deny` one; no
//! matching rule refuses it. An update is applied only when every record
//! is allowed (else REFUSED, as BIND and RFC 2136 section 3.3 answer;
//! Knot 3.2 answers NOTAUTH). Knot instead asks one rule to allow every
//! record of the update; BIND's `update-policy` decides per record, as
//! here (docs/decisions/0015-dynamic-update.md).
//!
//! Before the prerequisites are read, the request must be one some rule
//! is for at all ([`requester_allowed`]: key and address), so that a
//! stranger learns nothing of the zone through prerequisites (Knot checks
//! its ACL first too; BIND checks `update-policy` after them).
//!
//! A rule without a key is for unsigned requests only (as Knot's ACL);
//! one with a key, for requests signed with that key only.
//!
//! Everything here is a pure function of the rules and the request; the
//! configuration that fills the rules is the binary's.

use std::net::IpAddr;

use tern_wire::name::{LowerNameBuf, Name};
use tern_wire::types::RType;

use crate::message::UpdateRecord;

/// The most rules one zone may have (a bound on the work per record).
pub const MAX_UPDATE_RULES: usize = 256;

//----------- AddressPrefix --------------------------------------------------

/// An address prefix: `192.0.2.0/24`, `2001:db8::/32`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AddressPrefix {
    address: IpAddr,
    len: u8,
}

impl AddressPrefix {
    /// The prefix of `len` bits of `address`; `None` if `len` is longer
    /// than the address (32 bits for IPv4, 128 for IPv6).
    pub fn new(address: IpAddr, len: u8) -> Option<AddressPrefix> {
        let address = address.to_canonical();
        let bits = match address {
            IpAddr::V4(_) => 32,
            IpAddr::V6(_) => 128,
        };
        (len <= bits).then_some(AddressPrefix { address, len })
    }

    /// Whether `address` is in the prefix. An IPv4 address mapped into
    /// IPv6 (`::ffff:192.0.2.1`, as a dual-stack socket reports it) is
    /// taken as the IPv4 address.
    pub fn contains(&self, address: IpAddr) -> bool {
        match (self.address, address.to_canonical()) {
            (IpAddr::V4(prefix), IpAddr::V4(address)) => {
                let mask = u32::MAX.checked_shl(32 - u32::from(self.len)).unwrap_or(0);
                u32::from(prefix) & mask == u32::from(address) & mask
            }
            (IpAddr::V6(prefix), IpAddr::V6(address)) => {
                let mask = u128::MAX
                    .checked_shl(128 - u32::from(self.len))
                    .unwrap_or(0);
                u128::from(prefix) & mask == u128::from(address) & mask
            }
            _ => false,
        }
    }
}

//----------- OwnerMatch, OwnerRule ------------------------------------------

/// How an updated record's owner is matched to a rule's name (Knot's
/// `update-owner-match`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum OwnerMatch {
    /// The owner is the name or below it (Knot's `sub-or-equal`, the
    /// default).
    #[default]
    SubOrEqual,
    /// The owner is the name.
    Equal,
    /// The owner is strictly below the name.
    Sub,
    /// The owner matches the name label by label, each `*` label of the
    /// name matching any one label (Knot's `pattern`):
    /// `_acme-challenge.*.example.com.` matches
    /// `_acme-challenge.www.example.com.` only.
    Pattern,
}

impl OwnerMatch {
    /// Whether `owner` matches `name` this way.
    pub fn matches(self, owner: Name<'_>, name: Name<'_>) -> bool {
        match self {
            OwnerMatch::SubOrEqual => owner.ends_with(name),
            OwnerMatch::Equal => owner.eq_ignore_case(name),
            OwnerMatch::Sub => owner.len() > name.len() && owner.ends_with(name),
            OwnerMatch::Pattern => {
                owner.label_count() == name.label_count()
                    && owner
                        .labels()
                        .zip(name.labels())
                        .all(|(o, n)| n == b"*" || o.eq_ignore_ascii_case(n))
            }
        }
    }
}

/// Which owners a rule lets be updated (Knot's `update-owner`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum OwnerRule {
    /// Any owner in the zone.
    #[default]
    Any,
    /// Owners matching the TSIG key's name (a host updating its own name).
    Key(OwnerMatch),
    /// Owners matching the zone's name (`Equal`: the apex alone; `Sub`:
    /// every name but the apex).
    Zone(OwnerMatch),
    /// Owners matching one of the names (absolute; the configuration
    /// makes relative names absolute, as Knot appends the zone).
    Names(Vec<LowerNameBuf>, OwnerMatch),
}

//----------- UpdateRule -----------------------------------------------------

/// One rule of a zone's update policy.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct UpdateRule {
    /// The TSIG key a request must be signed with; `None`: the rule is for
    /// unsigned requests only.
    pub key: Option<LowerNameBuf>,
    /// Prefixes the client's address must fall in; empty: any address.
    pub addresses: Vec<AddressPrefix>,
    /// The types that may be updated; empty: any type. A record deleting
    /// every RRset of a name has type ANY, which must be listed.
    pub types: Vec<RType>,
    /// The owners that may be updated.
    pub owner: OwnerRule,
    /// A rule that refuses what it matches.
    pub deny: bool,
}

impl UpdateRule {
    /// A rule for requests signed with `key` from anywhere, any type, any
    /// owner.
    pub fn for_key(key: Name<'_>) -> UpdateRule {
        UpdateRule {
            key: Some(key.to_lower()),
            ..UpdateRule::default()
        }
    }

    /// Whether the rule is for this requester (key and address).
    fn is_for(&self, requester: &Requester<'_>) -> bool {
        let key = match (&self.key, requester.key) {
            (None, None) => true,
            (Some(mine), Some(theirs)) => mine.as_name().eq_ignore_case(theirs),
            _ => false,
        };
        key && (self.addresses.is_empty()
            || self.addresses.iter().any(|p| p.contains(requester.address)))
    }

    /// Whether the rule covers `record` updated in the zone at `origin`.
    fn covers(&self, requester: &Requester<'_>, origin: Name<'_>, record: &UpdateRecord) -> bool {
        if !self.types.is_empty() && !self.types.contains(&record.rtype) {
            return false;
        }
        let owner = record.owner();
        match &self.owner {
            OwnerRule::Any => true,
            OwnerRule::Key(how) => requester.key.is_some_and(|key| how.matches(owner, key)),
            OwnerRule::Zone(how) => how.matches(owner, origin),
            OwnerRule::Names(names, how) => names.iter().any(|n| how.matches(owner, n.as_name())),
        }
    }
}

//----------- Requester ------------------------------------------------------

/// Who sent an update: the TSIG key it was signed with (already checked by
/// the caller), and the client's address.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Requester<'a> {
    /// The key the request was signed with, if it was.
    pub key: Option<Name<'a>>,
    /// The client's address.
    pub address: IpAddr,
}

//----------- Decisions ------------------------------------------------------

/// Whether some rule that is not a `deny` rule is for this requester at
/// all: else the update is REFUSED before its prerequisites are read.
/// Bound: at most [`MAX_UPDATE_RULES`] rules are read.
pub fn requester_allowed(rules: &[UpdateRule], requester: &Requester<'_>) -> bool {
    rules
        .iter()
        .take(MAX_UPDATE_RULES)
        .any(|rule| !rule.deny && rule.is_for(requester))
}

/// Whether `record`, an update to the zone at `origin`, is allowed: the
/// first rule for the requester that covers the record decides; none
/// refuses. Bound: at most [`MAX_UPDATE_RULES`] rules, each with its
/// lists.
pub fn record_allowed(
    rules: &[UpdateRule],
    requester: &Requester<'_>,
    origin: Name<'_>,
    record: &UpdateRecord,
) -> bool {
    rules
        .iter()
        .take(MAX_UPDATE_RULES)
        .find(|rule| rule.is_for(requester) && rule.covers(requester, origin, record))
        .is_some_and(|rule| !rule.deny)
}

//=========== Tests ==========================================================

#[cfg(test)]
mod tests {
    use std::net::{Ipv4Addr, Ipv6Addr};

    use tern_wire::name::NameBuf;
    use tern_wire::types::RClass;

    use super::*;

    fn name(text: &str) -> NameBuf {
        NameBuf::from_text(text.as_bytes(), None).unwrap()
    }

    fn lower(text: &str) -> LowerNameBuf {
        name(text).as_name().to_lower()
    }

    fn txt(owner: &str) -> UpdateRecord {
        UpdateRecord::new(name(owner).as_name(), RType::TXT, RClass::IN, 60, b"\x01x")
    }

    fn record(owner: &str, rtype: RType) -> UpdateRecord {
        UpdateRecord::new(name(owner).as_name(), rtype, RClass::ANY, 0, b"")
    }

    const LOOPBACK: IpAddr = IpAddr::V4(Ipv4Addr::LOCALHOST);

    #[test]
    fn prefixes() {
        let net = AddressPrefix::new("192.0.2.0".parse().unwrap(), 24).unwrap();
        assert!(net.contains("192.0.2.77".parse().unwrap()));
        assert!(net.contains("::ffff:192.0.2.77".parse().unwrap()));
        assert!(!net.contains("192.0.3.1".parse().unwrap()));
        assert!(!net.contains("2001:db8::1".parse().unwrap()));
        let all = AddressPrefix::new(IpAddr::V4(Ipv4Addr::UNSPECIFIED), 0).unwrap();
        assert!(all.contains("203.0.113.9".parse().unwrap()));
        let six = AddressPrefix::new("2001:db8::".parse().unwrap(), 32).unwrap();
        assert!(six.contains("2001:db8:ffff::1".parse().unwrap()));
        assert!(!six.contains(IpAddr::V6(Ipv6Addr::LOCALHOST)));
        let host = AddressPrefix::new(IpAddr::V6(Ipv6Addr::LOCALHOST), 128).unwrap();
        assert!(host.contains(IpAddr::V6(Ipv6Addr::LOCALHOST)));
        assert!(AddressPrefix::new(LOOPBACK, 33).is_none());
        assert!(AddressPrefix::new(IpAddr::V6(Ipv6Addr::LOCALHOST), 129).is_none());
    }

    #[test]
    fn owner_matches() {
        let zone = name("example.com.");
        let www = name("WWW.example.com.");
        for (how, apex, below) in [
            (OwnerMatch::SubOrEqual, true, true),
            (OwnerMatch::Equal, true, false),
            (OwnerMatch::Sub, false, true),
        ] {
            assert_eq!(how.matches(zone.as_name(), zone.as_name()), apex, "{how:?}");
            assert_eq!(how.matches(www.as_name(), zone.as_name()), below, "{how:?}");
        }
        let pattern = name("_acme-challenge.*.example.com.");
        let yes = name("_ACME-challenge.www.example.com.");
        let deeper = name("_acme-challenge.a.b.example.com.");
        assert!(OwnerMatch::Pattern.matches(yes.as_name(), pattern.as_name()));
        assert!(!OwnerMatch::Pattern.matches(deeper.as_name(), pattern.as_name()));
        assert!(!OwnerMatch::Pattern.matches(www.as_name(), pattern.as_name()));
    }

    /// The ACME rule of issue 25: one key, TXT only, one name.
    #[test]
    fn acme_rule() {
        let origin = name("example.com.");
        let key = name("acme-key.");
        let rules = [UpdateRule {
            key: Some(key.as_name().to_lower()),
            types: vec![RType::TXT],
            owner: OwnerRule::Names(
                vec![lower("_acme-challenge.example.com.")],
                OwnerMatch::Equal,
            ),
            ..UpdateRule::default()
        }];
        let signed = Requester {
            key: Some(key.as_name()),
            address: LOOPBACK,
        };
        let unsigned = Requester {
            key: None,
            address: LOOPBACK,
        };
        let other_key = name("other-key.");
        let other = Requester {
            key: Some(other_key.as_name()),
            address: LOOPBACK,
        };
        let challenge = txt("_acme-challenge.example.com.");
        assert!(requester_allowed(&rules, &signed));
        assert!(!requester_allowed(&rules, &unsigned));
        assert!(!requester_allowed(&rules, &other));
        assert!(record_allowed(
            &rules,
            &signed,
            origin.as_name(),
            &challenge
        ));
        assert!(!record_allowed(
            &rules,
            &other,
            origin.as_name(),
            &challenge
        ));
        assert!(!record_allowed(
            &rules,
            &signed,
            origin.as_name(),
            &txt("www.example.com.")
        ));
        let a = record("_acme-challenge.example.com.", RType::A);
        assert!(!record_allowed(&rules, &signed, origin.as_name(), &a));
        // Deleting every RRset of the name is type ANY: not listed.
        let all = record("_acme-challenge.example.com.", RType::ANY);
        assert!(!record_allowed(&rules, &signed, origin.as_name(), &all));
    }

    /// A host's own name, from its network only; a deny rule before an
    /// allow rule wins for what it covers.
    #[test]
    fn key_owner_addresses_and_deny() {
        let origin = name("example.com.");
        let key = name("host1.example.com.");
        let rules = [
            UpdateRule {
                key: Some(key.as_name().to_lower()),
                types: vec![RType::TXT],
                deny: true,
                ..UpdateRule::default()
            },
            UpdateRule {
                key: Some(key.as_name().to_lower()),
                addresses: vec![AddressPrefix::new("127.0.0.0".parse().unwrap(), 8).unwrap()],
                owner: OwnerRule::Key(OwnerMatch::SubOrEqual),
                ..UpdateRule::default()
            },
        ];
        let here = Requester {
            key: Some(key.as_name()),
            address: "127.0.0.9".parse().unwrap(),
        };
        let away = Requester {
            key: Some(key.as_name()),
            address: "192.0.2.1".parse().unwrap(),
        };
        let own_a = record("HOST1.example.com.", RType::A);
        let sub_a = record("x.host1.example.com.", RType::A);
        let other_a = record("host2.example.com.", RType::A);
        assert!(record_allowed(&rules, &here, origin.as_name(), &own_a));
        assert!(record_allowed(&rules, &here, origin.as_name(), &sub_a));
        assert!(!record_allowed(&rules, &here, origin.as_name(), &other_a));
        assert!(!record_allowed(&rules, &away, origin.as_name(), &own_a));
        assert!(!requester_allowed(&rules, &away));
        assert!(!record_allowed(
            &rules,
            &here,
            origin.as_name(),
            &txt("host1.example.com.")
        ));
        // Zone owner rule: the apex alone, or everything below it.
        let apex_only = [UpdateRule {
            owner: OwnerRule::Zone(OwnerMatch::Equal),
            ..UpdateRule::default()
        }];
        let anonymous = Requester {
            key: None,
            address: LOOPBACK,
        };
        let apex = record("example.com.", RType::NS);
        assert!(record_allowed(
            &apex_only,
            &anonymous,
            origin.as_name(),
            &apex
        ));
        assert!(!record_allowed(
            &apex_only,
            &anonymous,
            origin.as_name(),
            &own_a
        ));
        // A key rule never matches an unsigned request.
        assert!(!record_allowed(
            &rules,
            &anonymous,
            origin.as_name(),
            &own_a
        ));
        assert!(!requester_allowed(&[], &anonymous));
    }
}
