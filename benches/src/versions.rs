//! Inputs of the benches of a zone's new version (`patch.rs`, `update.rs`;
//! they replace the `#[ignore]`d timing tests `address_patch_timing`,
//! `rebuild_cost` and `window_timing`): the zone `example.` at
//! [`SIZES`] names, the patches and UPDATEs a bench alternates (a change,
//! then the change taken back, so that the zone does not grow), and
//! signed zones made in a temporary state directory.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use tern_authority::{Zone, ZoneBuilder, ZoneChanges};
use tern_dnssec::Resigned;
use tern_update::{Access, Requester, UpdateMessage, UpdateOptions, UpdateRule, ZoneRecords};
use tern_wire::name::{Name, NameBuf};
use tern_wire::types::{RClass, RType};
use tern_xfr::journal::Difference;
use tern_zone::{Record, Records};
use tern_zones::rollover::ZoneKeys;
use tern_zones::signing::Signed;
use tern_zones::update::bench_api::SignedUpdate;

/// The two sizes of each bench, in names: the growth between them is what
/// a bench shows (a patch's cost should not follow the zone's).
pub const SIZES: [usize; 2] = [10_000, 100_000];

/// The zone every input here is of.
pub const ORIGIN: &str = "example.";

fn name(text: &str) -> NameBuf {
    NameBuf::from_text(text.as_bytes(), None).expect("a valid name")
}

//----------- Patches (tern-authority) ----------------------------------------

/// A zone's records by owner (wire form, lowercase), in the order a
/// builder is given them.
pub type Model = BTreeMap<Vec<u8>, Vec<(RType, u32, Vec<u8>)>>;

/// The SOA RDATA of `example.` with `serial`.
fn soa(serial: u32) -> Vec<u8> {
    let mut rdata = name("ns.example.").as_bytes().to_vec();
    rdata.extend_from_slice(name("host.example.").as_bytes());
    for value in [serial, 3600, 900, 604_800, 300] {
        rdata.extend_from_slice(&value.to_be_bytes());
    }
    rdata
}

/// The zone of `address_patch_timing` plus an apex NS: `hosts` hosts
/// `h{i}` with an A record each, every tenth one owning an MX that names
/// the host after it (`h0` names `h1`); the apex's SOA serial 1 and (not
/// in `address_patch_timing`'s zone) an NS naming `ns`, which has an
/// address. `hosts + 2` names, `hosts / 10 + 1` RRsets naming hosts in
/// the zone (so a patch that rewrites the apex resolves the glue of its
/// NS too).
pub fn glue_model(hosts: usize) -> Model {
    let mut model = Model::new();
    model.insert(
        name(ORIGIN).as_bytes().to_vec(),
        vec![
            (RType::SOA, 3600, soa(1)),
            (RType::NS, 3600, name("ns.example.").as_bytes().to_vec()),
        ],
    );
    model.insert(
        name("ns.example.").as_bytes().to_vec(),
        vec![(RType::A, 3600, vec![192, 0, 2, 53])],
    );
    for i in 0..hosts {
        let mut records = vec![(RType::A, 300, vec![192, 0, 2, (i % 250) as u8 + 1])];
        if i % 10 == 0 {
            let mut mx = vec![0, 10];
            mx.extend_from_slice(name(&format!("h{}.example.", i + 1)).as_bytes());
            records.push((RType::MX, 300, mx));
        }
        model.insert(name(&format!("h{i}.example.")).as_bytes().to_vec(), records);
    }
    model
}

/// The whole build of `model`: every record inserted into a
/// [`ZoneBuilder`], then [`ZoneBuilder::finish`].
///
/// # Panics
///
/// If the builder refuses the model (the generated ones build).
pub fn build_model(model: &Model) -> Zone {
    let mut builder = ZoneBuilder::new(name(ORIGIN).as_name());
    for (owner, records) in model {
        let owner = Name::from_wire(owner).expect("a model's owners are names");
        for (rtype, ttl, rdata) in records {
            builder
                .insert(owner, *rtype, RClass::IN, *ttl, rdata)
                .expect("the generated records are accepted");
        }
    }
    builder.finish().expect("the generated zone builds")
}

/// What a patch bench changes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PatchKind {
    /// A TXT at a new name (`dhcp-new`) added, then the name removed.
    NewName,
    /// The address of `h1` (which `h0`'s MX names) removed (a TXT keeps
    /// the name), then added back: the patch resolves the glue of the
    /// RRsets naming it.
    Address,
}

/// The two patches a bench alternates on the built `model`: the change
/// (with the SOA serial 2), then the change taken back (serial 3), each
/// setting the records of the owner changed and of the apex.
pub fn patches(model: &Model, kind: PatchKind) -> [ZoneChanges; 2] {
    let apex = name(ORIGIN).as_bytes().to_vec();
    let (owner, changed) = match kind {
        PatchKind::NewName => (
            name("dhcp-new.example.").as_bytes().to_vec(),
            vec![(RType::TXT, 300, b"\x03new".to_vec())],
        ),
        PatchKind::Address => (
            name("h1.example.").as_bytes().to_vec(),
            vec![(RType::TXT, 300, b"\x01x".to_vec())],
        ),
    };
    let step = |serial: u32, records: Option<&Vec<(RType, u32, Vec<u8>)>>| {
        let mut apex_records = model[&apex].clone();
        apex_records[0] = (RType::SOA, 3600, soa(serial));
        let mut changes = ZoneChanges::new();
        for (owner, records) in [(&owner, records), (&apex, Some(&apex_records))] {
            changes.set(
                Name::from_wire(owner).expect("a name"),
                records
                    .into_iter()
                    .flatten()
                    .map(|(rtype, ttl, rdata)| (*rtype, *ttl, &rdata[..])),
            );
        }
        changes
    };
    [step(2, Some(&changed)), step(3, model.get(&owner))]
}

//----------- Unsigned updates (tern-zones) ----------------------------------

/// The zone of `rebuild_cost`: `count` A records at names `h0`.. beside
/// the apex's SOA and NS and the NS's address, its served version built
/// whole ([`tern_zones::update::zone_of`]), and the update engine's
/// records of it as the update thread keeps them: laid over the served
/// version ([`records_over`]).
///
/// # Panics
///
/// If the generated zone does not load (it does).
pub fn update_zone(count: usize) -> (ZoneRecords, Arc<Zone>) {
    let mut text =
        String::from("$TTL 300\n@ SOA ns host 7 3600 900 604800 300\n@ NS ns\nns A 192.0.2.1\n");
    for i in 0..count {
        text.push_str(&format!("h{i} A 198.51.100.{}\n", i % 250));
    }
    let parsed = tern_zone::parse_bytes(
        text.as_bytes(),
        Path::new("example.zone"),
        name(ORIGIN).as_name(),
        &tern_zone::Options::default(),
        &mut tern_zone::NoInclude,
    )
    .expect("the generated zone scans");
    let listed = ZoneRecords::from_records(name(ORIGIN).as_name(), &parsed.records)
        .expect("the engine takes the generated zone");
    let zone = tern_zones::update::zone_of(name(ORIGIN).as_name(), &listed)
        .expect("the generated zone builds");
    drop(listed);
    let zone = Arc::new(zone);
    (records_over(&zone), zone)
}

/// The engine's records of `zone` (an unsigned zone's served version) as
/// the update thread keeps them: laid over it, afresh after each version
/// it makes ([`tern_zones::update::bench_api::records_over`]).
///
/// # Panics
///
/// If the engine does not take them (the benches' zones have their SOA).
pub fn records_over(zone: &Arc<Zone>) -> ZoneRecords {
    tern_zones::update::bench_api::records_over(zone).expect("the engine takes the served version")
}

/// An UPDATE of `example.` adding (or, `delete`, deleting) the TXT `text`
/// at `owner` (one label under the zone).
pub fn update_message(owner: &str, text: &str, delete: bool) -> Vec<u8> {
    let mut m = vec![0, 1, 0x28, 0, 0, 1, 0, 0, 0, 1, 0, 0];
    m.extend_from_slice(b"\x07example\x00\x00\x06\x00\x01");
    m.push(owner.len() as u8);
    m.extend_from_slice(owner.as_bytes());
    m.extend_from_slice(&[0xc0, 12, 0, 16]);
    // Class NONE: delete this record (RFC 2136 section 2.5.4).
    let class: u16 = if delete { 254 } else { 1 };
    m.extend_from_slice(&class.to_be_bytes());
    m.extend_from_slice(&(if delete { 0u32 } else { 60 }).to_be_bytes());
    m.extend_from_slice(&((text.len() + 1) as u16).to_be_bytes());
    m.push(text.len() as u8);
    m.extend_from_slice(text.as_bytes());
    m
}

/// The two UPDATEs a bench alternates: a TXT added at the new name `acme`,
/// then deleted.
pub fn update_messages() -> [Vec<u8>; 2] {
    [
        update_message("acme", "x", false),
        update_message("acme", "x", true),
    ]
}

/// One UPDATE (`message`, parsed here) through the engine on `records`,
/// allowed to anyone (`signed`: the zone is one tern signs): its
/// difference as the journal keeps it.
///
/// # Panics
///
/// If the engine refuses the message or it changes nothing (the benches'
/// do).
pub fn engine_update(records: &mut ZoneRecords, message: &[u8], signed: bool) -> Difference {
    let message = UpdateMessage::parse(message).expect("a well-formed UPDATE");
    let rules = [UpdateRule::default()];
    let access = Access {
        rules: &rules,
        requester: Requester {
            key: None,
            address: "127.0.0.1".parse().expect("an address"),
        },
    };
    let options = UpdateOptions {
        signed,
        ..UpdateOptions::default()
    };
    let difference = tern_update::update(records, &message, &access, &options)
        .expect("the engine takes the update")
        .expect("the update changes the zone");
    tern_zones::update::bench_api::journal_difference(difference)
}

/// The version after `previous` that `difference` made (the engine's
/// `records` after it): [`tern_zones::update::next_version`], a patch.
///
/// # Panics
///
/// If it fails (the benches' updates patch).
pub fn next_version(previous: &Zone, records: &ZoneRecords, difference: &Difference) -> Zone {
    tern_zones::update::next_version(
        name(ORIGIN).as_name(),
        previous,
        records,
        std::slice::from_ref(difference),
    )
    .expect("the next version is made")
    .0
}

//----------- Signed updates (tern-zones) ------------------------------------

/// A zone tern signed (that of `window_timing`): `example.` with `hosts` A
/// records and two delegations without DS (`sub`, and `x.e` below an
/// empty non-terminal), with glue; loaded and signed by
/// [`tern_zones::load::load_all`] (on two threads) with one key made in a
/// temporary state directory, which dropping it removes.
pub struct SignedZone {
    dir: PathBuf,
    /// The served version.
    pub served: Arc<Zone>,
    /// Its signed records, as the load kept them.
    pub previous: Records,
    /// Its keys.
    pub keys: Arc<ZoneKeys>,
}

impl SignedZone {
    /// The zone of `hosts` names signed with NSEC, or NSEC3 (one further
    /// iteration, no salt: the same chain at each run, no opt-out).
    ///
    /// # Panics
    ///
    /// If the temporary directory cannot be written or the zone does not
    /// load signed.
    pub fn new(hosts: usize, nsec3: bool) -> SignedZone {
        let dir = std::env::temp_dir().join(format!(
            "tern-bench-signed-{}-{hosts}-{}",
            std::process::id(),
            if nsec3 { "nsec3" } else { "nsec" }
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("a temporary directory");
        let file = dir.join("example.zone");
        let mut text = String::from(
            "$TTL 300\n@ SOA ns hostmaster 1 3600 900 604800 300\n@ NS ns\n\
             ns A 192.0.2.1\nsub NS ns.sub\nns.sub A 192.0.2.9\n\
             x.e NS ns.x.e\nns.x.e A 192.0.2.10\n",
        );
        for i in 0..hosts {
            text.push_str(&format!("h{i} A 192.0.2.{}\n", i % 250));
        }
        std::fs::write(&file, text).expect("the zone file written");
        let mut policy = tern_zones::policy::Policy::new("bench".to_string());
        policy.nsec3 = nsec3.then_some(tern_zones::policy::Nsec3Policy {
            iterations: 1,
            salt_length: 0,
            opt_out: false,
            salt_lifetime: 0,
        });
        let origin: Box<[u8]> = name(ORIGIN).as_bytes().into();
        let sources = tern_zones::load::Sources {
            dir: None,
            listed: vec![(ORIGIN.to_string(), file)],
            signing: Some(tern_zones::signing::Signing::new(
                dir.join("state"),
                2,
                vec![(origin, Arc::new(policy))],
            )),
        };
        let loaded = tern_zones::load::load_all(&sources, None).expect("the zone loads");
        assert!(loaded.errors.is_empty(), "{:?}", loaded.errors);
        let (served, stamp) = &loaded.zones[0];
        let signed = stamp.signed().expect("the zone is signed");
        SignedZone {
            served: Arc::clone(served),
            previous: signed.records().expect("its signed records read back"),
            keys: Arc::clone(stamp.keys().expect("the zone has keys")),
            dir,
        }
    }

    /// The state directory its keys are in.
    pub fn state_directory(&self) -> PathBuf {
        self.dir.join("state")
    }
}

impl Drop for SignedZone {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// What a signed bench's UPDATE does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SignedChange {
    /// A TXT at the new name `new`.
    NewName,
    /// A delegation made: an NS RRset at the new name `new`, its target
    /// out of the zone.
    Delegation,
}

/// An UPDATE of `example.` making `change`.
fn signed_message(change: SignedChange) -> Vec<u8> {
    let (rtype, rdata): (RType, &[u8]) = match change {
        SignedChange::NewName => (RType::TXT, b"\x03new"),
        SignedChange::Delegation => (RType::NS, b"\x02ns\x03net\x00"),
    };
    let mut m = vec![0, 1, 0x28, 0, 0, 1, 0, 0, 0, 1, 0, 0];
    m.extend_from_slice(b"\x07example\x00\x00\x06\x00\x01");
    m.extend_from_slice(b"\x03new\xc0\x0c");
    m.extend_from_slice(&rtype.0.to_be_bytes());
    m.extend_from_slice(&1u16.to_be_bytes());
    m.extend_from_slice(&60u32.to_be_bytes());
    m.extend_from_slice(&(rdata.len() as u16).to_be_bytes());
    m.extend_from_slice(rdata);
    m
}

/// The engine's records of `zone` after one UPDATE making `change`, and
/// its difference: what the update thread hands to the signing.
///
/// # Panics
///
/// If the engine refuses it (it does not).
pub fn signed_update(zone: &SignedZone, change: SignedChange) -> (ZoneRecords, Difference) {
    let mut unsigned = tern_zones::update::bench_api::unsigned_records(&zone.served, &zone.keys)
        .expect("the engine takes the served version's records");
    let difference = engine_update(&mut unsigned, &signed_message(change), true);
    (unsigned, difference)
}

/// The most records a window's signing of one of the benches' UPDATEs
/// reads, signs or copies, at any of [`SIZES`] (it reads some tens,
/// signs a few, copies none: the zone's size does not enter); a whole
/// signing reads every record of the zone.
pub const WINDOW_MOST: usize = 200;

/// Whether `update` (one of the benches' UPDATEs, signed by
/// [`bench_api::sign_update`](tern_zones::update::bench_api::sign_update))
/// was signed as a window: no signed records kept for the next group
/// (the whole zone's signing keeps every one), and at most
/// [`WINDOW_MOST`] records read, RRSIGs made and records copied. What it
/// cost, in words, either way.
pub fn window_check(update: &SignedUpdate) -> Result<String, String> {
    let cost = format!(
        "{} records read, {} RRSIGs made, {} records copied, {} signed records kept",
        update.visited, update.signatures, update.copied, update.kept
    );
    if update.kept != 0 {
        return Err(format!("signed whole: {cost}"));
    }
    if update.visited > WINDOW_MOST
        || update.signatures > WINDOW_MOST
        || update.copied > WINDOW_MOST
    {
        return Err(format!(
            "a window larger than {WINDOW_MOST} records: {cost}"
        ));
    }
    Ok(cost)
}

/// What [`sign_whole`] made, returned whole so that a bench drops it
/// outside its timed part (as `window_timing` did).
pub struct WholeSigning {
    /// The engine's records listed: what was signed.
    pub listed: Vec<Record>,
    /// What [`tern_zones::signing::sign_again`] made: the signed records
    /// and the RRSIGs made.
    pub signed: Signed<Resigned>,
}

/// The whole zone signed again as before windows (`window_timing`'s
/// comparison): the engine's records listed, then
/// [`tern_zones::signing::sign_again`] from the served version's signed
/// records, without building the version.
///
/// # Panics
///
/// If the signing fails.
pub fn sign_whole(zone: &SignedZone, unsigned: &ZoneRecords) -> WholeSigning {
    let listed = unsigned.to_records();
    let signed = tern_zones::signing::sign_again(
        zone.served.origin(),
        &zone.previous,
        &listed,
        &zone.keys.policy,
        &zone.state_directory(),
        tern_zones::unix_time(),
        Some(zone.served.serial()),
    )
    .expect("the zone signs again");
    WholeSigning { listed, signed }
}

//=========== Tests ==========================================================

#[cfg(test)]
mod tests {
    use tern_authority::RecordCursor;
    use tern_zone::RecordList;

    use super::*;

    fn types_at(zone: &Zone, owner: &str) -> Vec<RType> {
        zone.owner_records(name(owner).as_name())
            .iter()
            .map(|record| record.rtype)
            .collect()
    }

    /// The patch benches' inputs: the new name comes and goes; `h1`'s
    /// address goes and comes back, each time resolving the glue of the
    /// one RRset naming it (`h0`'s MX); the serial moves; each version
    /// holds the records a whole build of the same model holds.
    #[test]
    fn the_patches_change_what_they_say() {
        let model = glue_model(1_000);
        let built = build_model(&model);
        assert_eq!(built.record_count(), 1_000 + 100 + 3);
        let mut resolved = Vec::new();
        for kind in [PatchKind::NewName, PatchKind::Address] {
            let [change, back] = patches(&model, kind);
            let changed = built.patch(&change).unwrap();
            assert_eq!(changed.zone.serial(), 2, "{kind:?}");
            match kind {
                PatchKind::NewName => {
                    assert_eq!(types_at(&changed.zone, "dhcp-new.example."), [RType::TXT]);
                    assert_eq!(changed.zone.record_count(), built.record_count() + 1);
                }
                PatchKind::Address => {
                    assert_eq!(types_at(&built, "h1.example."), [RType::A]);
                    assert_eq!(types_at(&changed.zone, "h1.example."), [RType::TXT]);
                }
            }
            resolved.push(changed.work.glue_resolved);
            let restored = changed.zone.patch(&back).unwrap();
            assert_eq!(restored.zone.serial(), 3, "{kind:?}");
            assert_eq!(restored.zone.record_count(), built.record_count());
            assert_eq!(restored.zone.node_count(), built.node_count());
            assert_eq!(
                types_at(&restored.zone, "h1.example."),
                types_at(&built, "h1.example.")
            );
            assert!(types_at(&restored.zone, "dhcp-new.example.").is_empty());
            resolved.push(restored.work.glue_resolved);
        }
        // The apex's NS is resolved again by each (the apex is rewritten
        // with its SOA); the address's patches also resolve `h0`'s MX,
        // and only it.
        assert_eq!(resolved, [1, 1, 2, 2], "RRsets' glue resolved");
    }

    fn txt_count(zone: &Zone) -> usize {
        let mut cursor = RecordCursor::default();
        let mut count = 0;
        while let Some(record) = zone.next_record(&mut cursor) {
            count += usize::from(record.rtype == RType::TXT);
        }
        count
    }

    /// The unsigned update bench's input: the two UPDATEs add the TXT,
    /// then delete it, and the next version is a patch (a small part of
    /// the tables copied), not a whole build.
    #[test]
    fn the_updates_add_then_delete_and_patch() {
        let (mut records, zone) = update_zone(10_000);
        let [add, delete] = update_messages();
        let difference = engine_update(&mut records, &add, false);
        assert_eq!(difference.added.len(), 1);
        assert!(difference.deleted.is_empty());
        let (next, work) = tern_zones::update::next_version(
            name(ORIGIN).as_name(),
            &zone,
            &records,
            std::slice::from_ref(&difference),
        )
        .unwrap();
        assert_eq!(txt_count(&next), 1);
        assert_eq!(next.record_count(), zone.record_count() + 1);
        // A patch: the new name and the apex rewritten, a few chunks of
        // the tables copied (a whole build touches every node).
        assert_eq!(work.nodes_touched, 2, "{work:?}");
        assert!(work.chunks_copied < 16, "{work:?}");
        // As the update thread does: the records laid over the new version.
        let next = Arc::new(next);
        let mut records = records_over(&next);
        let difference = engine_update(&mut records, &delete, false);
        assert_eq!(difference.deleted.len(), 1);
        assert!(difference.added.is_empty());
        let (after, work) = tern_zones::update::next_version(
            name(ORIGIN).as_name(),
            &next,
            &records,
            std::slice::from_ref(&difference),
        )
        .unwrap();
        assert_eq!(txt_count(&after), 0);
        assert_eq!(after.record_count(), zone.record_count());
        // A patch too: the name removed and the apex rewritten.
        assert_eq!(work.nodes_touched, 2, "{work:?}");
        assert!(work.chunks_copied < 16, "{work:?}");
    }

    /// The signed update bench's inputs: with NSEC and NSEC3, a new name
    /// and a delegation made are signed as windows (no signed records
    /// kept, few read, signed and copied: [`window_check`]) and served;
    /// the whole zone's signing, for comparison, signs the zone's records
    /// again; dropping the zone removes its keys' directory.
    #[test]
    fn the_signed_updates_are_signed_as_windows() {
        for (nsec3, change) in [
            (false, SignedChange::NewName),
            (false, SignedChange::Delegation),
            (true, SignedChange::NewName),
            (true, SignedChange::Delegation),
        ] {
            let zone = SignedZone::new(1_000, nsec3);
            let (unsigned, difference) = signed_update(&zone, change);
            let update = tern_zones::update::bench_api::sign_update(
                &zone.served,
                &zone.previous,
                &unsigned,
                std::slice::from_ref(&difference),
                &zone.keys,
            )
            .unwrap();
            let context = format!("nsec3 {nsec3}, {change:?}");
            if let Err(error) = window_check(&update) {
                panic!("{context}: {error}");
            }
            let expected = match change {
                SignedChange::NewName => RType::TXT,
                SignedChange::Delegation => RType::NS,
            };
            assert!(
                types_at(&update.zone, "new.example.").contains(&expected),
                "{context}"
            );
            assert!(update.zone.serial() > zone.served.serial(), "{context}");
            // The whole signing: every signed record again (the previous
            // version's, the new name's and its denial's), each of the
            // zone's RRsets signed.
            let whole = sign_whole(&zone, &unsigned);
            assert!(
                whole.signed.zone.records.len() >= zone.previous.len(),
                "{context}: {} signed records, {} before",
                whole.signed.zone.records.len(),
                zone.previous.len()
            );
            assert!(
                whole.signed.zone.signatures + whole.signed.zone.kept > 1_000,
                "{context}: {} RRSIGs made, {} kept",
                whole.signed.zone.signatures,
                whole.signed.zone.kept
            );
            let dir = zone.dir.clone();
            drop(zone);
            assert!(!dir.exists(), "the keys' directory removed");
        }
    }
}
