//! `update:` on a `zones.list` entry (dynamic updates, RFC 2136) and
//! `zone-file-sync`: the rules as tern-update's [`UpdateRule`]s, their
//! keys from `keys:`.
//!
//! ```yaml
//! update:
//!   - {key: acme-key, types: [TXT], names: ["_acme-challenge.example.com."]}
//!   - {key: dhcp-key, addresses: ["127.0.0.0/8"], types: [A, AAAA, PTR], owner: subtree}
//! ```
//!
//! `owner` (Knot's `update-owner` and `update-owner-match` in one word):
//! `subtree` (the default: at or below one of `names`, or anywhere in the
//! zone without names), `name` (exactly one of `names`; the default when
//! `names` is given), `below` (strictly below one of `names`), `pattern`
//! (`names` with `*` labels matching any one label), `self` (the key's
//! own name), `self-subtree` (at or below the key's name).

use std::time::Duration;

use anyhow::{bail, Context};
use tern_update::policy::MAX_UPDATE_RULES;
use tern_update::{AddressPrefix, OwnerMatch, OwnerRule, UpdateRule};
use tern_wire::name::{LowerNameBuf, Name, NameBuf};
use tern_wire::types::RType;

use super::raw::RawUpdateRule;

/// `zones.secondary[].update`: `forward` (to the zone's primaries, their
/// answer relayed), `refused` (the default, as BIND without
/// `allow-update-forwarding`) or `notauth` (as Knot without an update
/// ACL).
pub(crate) fn secondary_update(text: &str) -> anyhow::Result<tern_zones::update::SecondaryUpdate> {
    use tern_zones::update::SecondaryUpdate;
    match text {
        "forward" => Ok(SecondaryUpdate::Forward),
        "refused" => Ok(SecondaryUpdate::Refused),
        "notauth" => Ok(SecondaryUpdate::NotAuth),
        _ => bail!("update: {text:?}: expected forward, refused or notauth"),
    }
}

/// The default of `zone-file-sync`.
pub(crate) const DEFAULT_ZONE_FILE_SYNC: Duration = Duration::from_secs(60);

/// The most names or types one rule may list (a bound on the work per
/// updated record).
const MAX_RULE_ITEMS: usize = 256;

/// The rules of the zone at `origin`, checked against `keys`.
pub(crate) fn rules(
    origin: Name<'_>,
    raw: Vec<RawUpdateRule>,
    keys: &[tern_xfr::tsig::Key],
) -> anyhow::Result<Vec<UpdateRule>> {
    if raw.len() > MAX_UPDATE_RULES {
        bail!("update: at most {MAX_UPDATE_RULES} rules");
    }
    raw.into_iter()
        .enumerate()
        .map(|(index, rule)| {
            rule_of(origin, rule, keys).with_context(|| format!("update[{index}]"))
        })
        .collect()
}

fn rule_of(
    origin: Name<'_>,
    raw: RawUpdateRule,
    keys: &[tern_xfr::tsig::Key],
) -> anyhow::Result<UpdateRule> {
    let key = match raw.key {
        Some(text) => {
            let name = NameBuf::from_text(text.as_bytes(), Some(Name::ROOT))
                .map_err(|err| anyhow::anyhow!("key: {text}: {err}"))?;
            let lower = LowerNameBuf::from_name(name.as_name());
            if !keys
                .iter()
                .any(|key| key.lower_name().as_bytes() == lower.as_bytes())
            {
                bail!("key: no key named {} in keys", lower.as_name());
            }
            Some(lower)
        }
        None => None,
    };
    let addresses = raw
        .addresses
        .unwrap_or_default()
        .iter()
        .map(|text| {
            let cidr = tern_server::Cidr::parse(text)
                .with_context(|| format!("addresses: {text}: not an address or prefix"))?;
            AddressPrefix::new(cidr.address, cidr.prefix)
                .with_context(|| format!("addresses: {text}: prefix too long"))
        })
        .collect::<anyhow::Result<Vec<_>>>()?;
    let types = raw.types.unwrap_or_default();
    let names = raw.names.unwrap_or_default();
    if types.len() > MAX_RULE_ITEMS || names.len() > MAX_RULE_ITEMS {
        bail!("at most {MAX_RULE_ITEMS} types and {MAX_RULE_ITEMS} names");
    }
    let types = types
        .iter()
        .map(|text| {
            RType::from_text(text.as_bytes())
                .with_context(|| format!("types: {text}: no such type"))
        })
        .collect::<anyhow::Result<Vec<_>>>()?;
    let names = names
        .iter()
        .map(|text| {
            let name = NameBuf::from_text(text.as_bytes(), Some(origin))
                .map_err(|err| anyhow::anyhow!("names: {text}: {err}"))?;
            if !name.as_name().ends_with(origin) {
                bail!("names: {text} is not in the zone {origin}");
            }
            Ok(LowerNameBuf::from_name(name.as_name()))
        })
        .collect::<anyhow::Result<Vec<_>>>()?;
    let with_names = |how| {
        if names.is_empty() {
            bail!("owner: {} needs names", raw.owner.as_deref().unwrap_or(""));
        }
        Ok(OwnerRule::Names(names.clone(), how))
    };
    let owner = match raw.owner.as_deref() {
        None if names.is_empty() => OwnerRule::Any,
        None | Some("name") => with_names(OwnerMatch::Equal)?,
        Some("subtree") if names.is_empty() => OwnerRule::Any,
        Some("subtree") => with_names(OwnerMatch::SubOrEqual)?,
        Some("below") => with_names(OwnerMatch::Sub)?,
        Some("pattern") => with_names(OwnerMatch::Pattern)?,
        Some(own @ ("self" | "self-subtree")) => {
            if key.is_none() {
                bail!("owner: {own} needs a key");
            }
            if !names.is_empty() {
                bail!("owner: {own} takes no names");
            }
            OwnerRule::Key(if own == "self" {
                OwnerMatch::Equal
            } else {
                OwnerMatch::SubOrEqual
            })
        }
        Some(other) => {
            bail!("owner: {other}: not one of subtree, name, below, pattern, self, self-subtree")
        }
    };
    Ok(UpdateRule {
        key,
        addresses,
        types,
        owner,
        deny: raw.deny.unwrap_or(false),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> anyhow::Result<Vec<UpdateRule>> {
        let raw: Vec<RawUpdateRule> = serde_yaml::from_str(text).unwrap();
        let origin = NameBuf::from_text(b"example.com.", None).unwrap();
        let key_name = NameBuf::from_text(b"acme-key.", None).unwrap();
        let keys = [tern_xfr::tsig::Key::new(
            key_name.as_name(),
            tern_xfr::tsig::Algorithm::HmacMd5,
            b"secret",
        )];
        rules(origin.as_name(), raw, &keys)
    }

    #[test]
    fn the_issues_rules_read() {
        let rules = parse(
            "- {key: acme-key, types: [TXT], names: [\"_acme-challenge.example.com.\"]}\n\
             - {key: Acme-Key., addresses: [\"127.0.0.0/8\", \"::1\"], types: [A, AAAA, PTR], owner: subtree}\n\
             - {key: acme-key, owner: self}\n\
             - {names: [\"_acme-challenge.*\"], owner: pattern, deny: true}\n",
        )
        .unwrap();
        assert_eq!(rules.len(), 4);
        assert_eq!(rules[0].types, vec![RType::TXT]);
        let acme = NameBuf::from_text(b"_acme-challenge.example.com.", None).unwrap();
        assert_eq!(
            rules[0].owner,
            OwnerRule::Names(
                vec![LowerNameBuf::from_name(acme.as_name())],
                OwnerMatch::Equal
            )
        );
        assert_eq!(rules[1].owner, OwnerRule::Any);
        assert_eq!(rules[1].addresses.len(), 2);
        assert_eq!(rules[2].owner, OwnerRule::Key(OwnerMatch::Equal));
        assert!(rules[3].key.is_none() && rules[3].deny);
    }

    #[test]
    fn bad_rules_are_refused_with_their_place() {
        for (text, expected) in [
            ("- {key: other}\n", "no key named other."),
            ("- {types: [NOPE]}\n", "NOPE: no such type"),
            ("- {names: [\"www.example.org.\"]}\n", "not in the zone"),
            ("- {owner: below}\n", "needs names"),
            ("- {owner: self}\n", "needs a key"),
            ("- {owner: everywhere}\n", "not one of"),
            ("- {addresses: [\"300.0.0.1\"]}\n", "not an address"),
        ] {
            let err = format!("{:#}", parse(text).unwrap_err());
            assert!(err.contains(expected), "{text}: {err}");
            assert!(err.contains("update[0]"), "{err}");
        }
    }
}
