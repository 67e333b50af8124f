//! What the secondary zones start from: each zone's configuration and
//! saved copy (configured secondaries, consumed catalogs, and the members
//! their saved copies list), its role, the copies to serve at once, and the
//! zones NOTIFY is taken for.

use std::collections::HashSet;
use std::path::Path;
use std::sync::Arc;

use tern_authority::Zone;
use tern_wire::name::LowerNameBuf;
use tern_xfr::notify::{NotifySource, NotifyZones};

use crate::load::Origin;
use crate::refresh::SecondaryConfig;
use crate::state::load_saved;

/// What the secondary zones start from: each zone's configuration and saved
/// copy (configured secondaries, consumed catalogs, and the members their
/// saved copies list), its role, the copies to serve at once (catalogs are
/// kept, not served), and the zones NOTIFY is taken for.
pub struct Plan {
    /// Each secondary zone (configured, consumed catalog, member) for the
    /// refresh thread, with its saved copy.
    pub starts: Vec<crate::refresh::Start>,
    /// The role of each of `starts`, for `tern zone-status`.
    pub roles: Vec<String>,
    /// The saved copies to serve at once (not consumed catalogs).
    pub served: Vec<Arc<Zone>>,
    /// The consumed catalogs and the members their saved copies list.
    pub consumed: Vec<(SecondaryConfig, Vec<LowerNameBuf>)>,
    /// The zones NOTIFY is taken for.
    pub notify_zones: NotifyZones,
}

impl Plan {
    /// The plan for `secondaries` and `catalogs`, from the state directory.
    pub fn new(
        state_directory: Option<&Path>,
        secondaries: &[SecondaryConfig],
        catalogs: &[SecondaryConfig],
    ) -> Plan {
        let mut plan = Plan {
            starts: Vec::new(),
            roles: Vec::new(),
            served: Vec::new(),
            consumed: Vec::new(),
            notify_zones: NotifyZones::default(),
        };
        // Every origin planned so far (a member listed twice, or also
        // configured, is taken once).
        let mut known: HashSet<Origin> = secondaries
            .iter()
            .chain(catalogs)
            .map(|config| config.origin.as_bytes().into())
            .collect();
        let add = |plan: &mut Plan, config: &SecondaryConfig, role: String, serve: bool| {
            let saved = load_saved(state_directory, config);
            if let (true, Some((zone, _))) = (serve, &saved) {
                plan.served.push(Arc::clone(zone));
            }
            plan.starts.push((config.clone(), saved));
            plan.roles.push(role);
        };
        for config in secondaries {
            add(&mut plan, config, "secondary".to_string(), true);
        }
        for catalog in catalogs {
            add(&mut plan, catalog, "catalog".to_string(), false);
            let listed = plan
                .starts
                .last()
                .and_then(|(_, saved)| saved.as_ref())
                .and_then(|(zone, _)| crate::catalog_zone::members(zone).ok())
                .unwrap_or_default();
            let mut members = Vec::new();
            for member in listed {
                if !known.insert(member.as_bytes().into()) {
                    continue;
                }
                let config = SecondaryConfig {
                    origin: member,
                    primaries: catalog.primaries.clone(),
                    key: catalog.key.clone(),
                    tls: catalog.tls.clone(),
                };
                let role = format!("member of {}", catalog.origin.as_name());
                add(&mut plan, &config, role, true);
                members.push(member);
            }
            plan.consumed.push((catalog.clone(), members));
        }
        *plan
            .notify_zones
            .write()
            .unwrap_or_else(|poisoned| poisoned.into_inner()) = plan
            .starts
            .iter()
            .map(|(config, _)| (config.origin.as_bytes().into(), notify_source(config)))
            .collect();
        plan
    }
}

/// Where NOTIFYs for a secondary zone may come from: its primaries, with
/// its key.
pub(crate) fn notify_source(config: &SecondaryConfig) -> NotifySource {
    NotifySource {
        primaries: config.primaries.clone(),
        key: config.key.clone(),
    }
}
