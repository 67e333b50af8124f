//! A signed zone's records kept for its next signing, on disk rather
//! than in memory.
//!
//! The incremental signer ([`crate::signing::sign_again`]) needs the
//! previous signed version's records, in the signer's order, once per
//! reload. Held in memory beside the served zone they came close to
//! doubling a signed zone's footprint (83 MB for the 800,016 records of
//! 200,000 A records signed with NSEC), and at a start they were built at
//! the same time as the `ZoneBuilder`'s tables and the served zone: the
//! peak of a signed start. They are written instead, as the signer hands them on, to a file
//! of the state directory that is removed as soon as it is made (only the
//! open descriptor names it: a crash leaves nothing behind, except in the
//! instant between its creation and its removal, and the kernel frees it
//! with the last handle), and read back into a
//! [`Records`] by the next signing only, for its duration.
//!
//! A signing that changed a few owners does not write the zone again: it
//! appends a patch ([`KeptRecords::patched`]), each changed owner with
//! all its new records, and the new version's list is the previous one's
//! (the same file, its patches) with that patch after them; reading it
//! back puts each patched owner's latest records in the place of its
//! records in the file's first list (an owner not in it, a name added
//! since, in its place in canonical order). The versions share the file, each
//! reading up to its own end; [`MAX_PATCHES`] patches at most, then the
//! zone is signed again from its previous version and written whole.
//!
//! The format is this process's own, never read by another: per record,
//! the owner's length (0: the previous record's owner) and the owner in
//! wire form, class, TTL, type, RDATA length and RDATA, big-endian; a
//! patch, per owner: the owner's length and the owner, a 32-bit count of
//! its records, and those records as above. It is
//! read back checked all the same (lengths bounded, names validated, the
//! record count as written), so a file damaged on disk fails the signing
//! that reads it, which keeps the version served, rather than misleading
//! it.

use std::fs::{File, OpenOptions};
use std::io::{self, BufWriter, Read, Write};
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use tern_wire::name::Name;
use tern_wire::types::{RClass, RType};
use tern_zone::{Location, RecordRef, Records, Sink};

/// Octets buffered before each write to the file.
const WRITE_BUFFER: usize = 1 << 20;

/// Octets read from the file at a time.
const READ_CHUNK: usize = 1 << 20;

/// The most patches a kept list carries: past it the next signing writes
/// the whole list again (each read applies every patch).
pub const MAX_PATCHES: usize = 64;

/// The most owners a patch names (a bound on what a read holds besides
/// the records).
pub const MAX_PATCH_OWNERS: usize = 4096;

/// Names the files made by this process apart (each is removed at once;
/// the name only has to be new while the file is created).
static NEXT_FILE: AtomicU64 = AtomicU64::new(0);

//----------- KeptWriter -----------------------------------------------------

/// Writes records as a [`Sink`]; [`KeptWriter::finish`] gives the
/// [`KeptRecords`] to read them back.
pub struct KeptWriter {
    out: BufWriter<File>,
    owner: Vec<u8>,
    records: usize,
    /// The first write error: the sink fails with it (a sink's error is a
    /// static text), and [`KeptWriter::finish`] says what it was.
    error: Option<io::Error>,
}

impl KeptWriter {
    /// A new, already unlinked file in `directory` (which must exist),
    /// readable by this process only.
    pub fn create(directory: &Path) -> io::Result<KeptWriter> {
        let number = NEXT_FILE.fetch_add(1, Ordering::Relaxed);
        let path = directory.join(format!(".signed-records.{}.{number}", std::process::id()));
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&path)?;
        std::fs::remove_file(&path)?;
        Ok(KeptWriter {
            out: BufWriter::with_capacity(WRITE_BUFFER, file),
            owner: Vec::new(),
            records: 0,
            error: None,
        })
    }

    /// The records written, to be read back.
    pub fn finish(self) -> io::Result<KeptRecords> {
        if let Some(error) = self.error {
            return Err(error);
        }
        let file = self.out.into_inner().map_err(|err| err.into_error())?;
        let length = file.metadata()?.len();
        Ok(KeptRecords {
            file: Arc::new(Shared {
                file,
                end: AtomicU64::new(length),
            }),
            length,
            base: self.records,
            records: self.records,
            patches: Vec::new(),
            written: length,
            start: 0,
        })
    }

    fn write(&mut self, record: RecordRef<'_>) -> io::Result<()> {
        write_record(&mut self.out, &mut self.owner, record)
    }
}

/// Writes `record` to `out` in the kept format, `owner` the previous
/// record's owner (updated).
fn write_record(
    out: &mut impl Write,
    owner: &mut Vec<u8>,
    record: RecordRef<'_>,
) -> io::Result<()> {
    let name = record.owner.as_bytes();
    if name == owner.as_slice() {
        out.write_all(&[0])?;
    } else {
        // A wire name is 1 to 255 octets.
        out.write_all(&[name.len() as u8])?;
        out.write_all(name)?;
        owner.clear();
        owner.extend_from_slice(name);
    }
    let length = u16::try_from(record.rdata.len())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "RDATA exceeds 65535"))?;
    let mut fixed = [0; 10];
    fixed[0..2].copy_from_slice(&record.class.0.to_be_bytes());
    fixed[2..6].copy_from_slice(&record.ttl.to_be_bytes());
    fixed[6..8].copy_from_slice(&record.rtype.0.to_be_bytes());
    fixed[8..10].copy_from_slice(&length.to_be_bytes());
    out.write_all(&fixed)?;
    out.write_all(record.rdata)
}

impl Sink for KeptWriter {
    fn record(&mut self, record: RecordRef<'_>) -> Result<(), &'static str> {
        if self.error.is_some() {
            return Err("cannot write the signed records kept for the next signing");
        }
        match self.write(record) {
            Ok(()) => {
                self.records += 1;
                Ok(())
            }
            Err(error) => {
                self.error = Some(error);
                Err("cannot write the signed records kept for the next signing")
            }
        }
    }
}

//----------- KeptRecords ----------------------------------------------------

/// The file the versions of one zone's kept records share, and where its
/// next patch goes (each patch has octets of its own: a version never
/// sees another's writes).
struct Shared {
    file: File,
    end: AtomicU64,
}

/// One patch of a kept list: where it is in the file, its octets and how
/// many owners it names.
#[derive(Clone, Copy, Debug)]
struct Patch {
    at: u64,
    length: u64,
    owners: usize,
}

/// Records written by a [`KeptWriter`], and the patches appended since
/// ([`KeptRecords::patched`]), read back by [`KeptRecords::read`].
pub struct KeptRecords {
    file: Arc<Shared>,
    /// The first list's octets and records.
    length: u64,
    base: usize,
    /// The records after the patches.
    records: usize,
    patches: Vec<Patch>,
    /// The octets this version wrote: the whole list, or its patch.
    written: u64,
    /// Where the first list begins in `file` (after a saved copy's
    /// header); it ends at `length`.
    start: u64,
}

impl KeptRecords {
    /// How many records were kept.
    pub fn len(&self) -> usize {
        self.records
    }

    /// Whether none was.
    pub fn is_empty(&self) -> bool {
        self.records == 0
    }

    /// The octets on disk this version reads (the list and its patches).
    pub fn size(&self) -> u64 {
        self.length - self.start + self.patches.iter().map(|patch| patch.length).sum::<u64>()
    }

    /// The octets this version wrote: the whole list, or one patch.
    pub fn written(&self) -> u64 {
        self.written
    }

    /// How many patches follow the list.
    pub fn patch_count(&self) -> usize {
        self.patches.len()
    }

    /// The octets of the patches.
    pub fn patch_size(&self) -> u64 {
        self.patches.iter().map(|patch| patch.length).sum()
    }

    /// This list with `owners` (each owner, once, with all its records in
    /// the new version) in the place of their records: a patch appended to
    /// the shared file, nothing rewritten. `records` is the new list's
    /// record count. Errors: the file's, or more than
    /// [`MAX_PATCHES`] patches or [`MAX_PATCH_OWNERS`] owners.
    pub fn patched(
        &self,
        owners: &[(Name<'_>, Vec<RecordRef<'_>>)],
        records: usize,
    ) -> io::Result<KeptRecords> {
        if self.patches.len() >= MAX_PATCHES || owners.len() > MAX_PATCH_OWNERS {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "kept records: too many patches",
            ));
        }
        let mut out = Vec::new();
        for (owner, list) in owners {
            let name = owner.as_bytes();
            out.push(name.len() as u8);
            out.extend_from_slice(name);
            let count = u32::try_from(list.len()).map_err(|_| {
                io::Error::new(io::ErrorKind::InvalidInput, "kept records: owner too large")
            })?;
            out.extend_from_slice(&count.to_be_bytes());
            let mut previous = Vec::new();
            for record in list {
                write_record(&mut out, &mut previous, *record)?;
            }
        }
        let length = out.len() as u64;
        let at = self.file.end.fetch_add(length, Ordering::Relaxed);
        self.file.file.write_all_at(&out, at)?;
        let mut patches = self.patches.clone();
        patches.push(Patch {
            at,
            length,
            owners: owners.len(),
        });
        Ok(KeptRecords {
            file: Arc::clone(&self.file),
            length: self.length,
            base: self.base,
            records,
            patches,
            written: length,
            start: self.start,
        })
    }

    /// The latest records of each owner the patches name, by lowercased
    /// owner. Bound: the patches' octets; each owner's records as counted,
    /// at most [`MAX_PATCH_OWNERS`] owners a patch.
    fn read_patches(&self) -> io::Result<hashbrown::HashMap<Vec<u8>, Records>> {
        let damaged = |what: &str| io::Error::new(io::ErrorKind::InvalidData, what.to_string());
        let mut owners = hashbrown::HashMap::new();
        for patch in &self.patches {
            let mut reader = io::BufReader::new(At {
                file: &self.file.file,
                at: patch.at,
                end: patch.at + patch.length,
            });
            for _ in 0..patch.owners.min(MAX_PATCH_OWNERS) {
                let mut length = [0u8];
                reader.read_exact(&mut length)?;
                let mut owner = vec![0; usize::from(length[0])];
                reader.read_exact(&mut owner)?;
                let name = Name::from_wire(&owner)
                    .map_err(|_| damaged("kept records: a bad patched owner"))?;
                let mut count = [0u8; 4];
                reader.read_exact(&mut count)?;
                let count = u32::from_be_bytes(count) as usize;
                let mut records = Records::new();
                read_records(&mut reader, count, &mut records)?;
                owners.insert(name.to_lower().as_bytes().to_vec(), records);
            }
            if !io::BufRead::fill_buf(&mut reader)?.is_empty() {
                return Err(damaged("kept records: a patch longer than written"));
            }
        }
        Ok(owners)
    }

    /// The records, in the order written, each handed to `sink` as it is
    /// read: only the read buffer is held here, not the records (how a
    /// zone signed whole is built from its kept records once the signer
    /// has freed its own copy of the zone). Bound: as [`KeptRecords::read`];
    /// a list with patches is read whole first.
    pub fn read_into(&self, sink: &mut dyn Sink) -> io::Result<()> {
        let damaged = |what: &str| io::Error::new(io::ErrorKind::InvalidData, what.to_string());
        if !self.patches.is_empty() {
            for record in self.read()?.iter() {
                sink.record(record).map_err(damaged)?;
            }
            return Ok(());
        }
        let mut reader = io::BufReader::with_capacity(
            READ_CHUNK,
            At {
                file: &self.file.file,
                at: self.start,
                end: self.length,
            },
        );
        read_records(&mut reader, self.base, sink)?;
        if !io::BufRead::fill_buf(&mut reader)?.is_empty() {
            return Err(damaged("kept records: more than written"));
        }
        Ok(())
    }

    /// The records, in the order written. Reads at positions (no shared
    /// cursor), so several readers may read at once. Bound: one pass over
    /// the file, at most the record count written.
    pub fn read(&self) -> io::Result<Records> {
        let damaged = |what: &str| io::Error::new(io::ErrorKind::InvalidData, what.to_string());
        let mut patched = self.read_patches()?;
        let mut records = Records::new();
        Sink::reserve(&mut records, self.records);
        let mut reader = io::BufReader::with_capacity(
            READ_CHUNK,
            At {
                file: &self.file.file,
                at: self.start,
                end: self.length,
            },
        );
        if patched.is_empty() {
            read_records(&mut reader, self.base, &mut records)?;
        } else {
            // The list's records, each patched owner's replaced by its
            // latest (at its first record; the list keeps an owner's
            // records together).
            let mut list = Records::new();
            read_records(&mut reader, self.base, &mut list)?;
            // The patched owners in canonical order, the first last: one
            // still not met when the list reaches an owner after it is not
            // in the list (a name a later version added), and goes there.
            let mut order: Vec<Vec<u8>> = patched.keys().cloned().collect();
            let canonical = |a: &[u8], b: &[u8]| match (Name::from_wire(a), Name::from_wire(b)) {
                (Ok(a), Ok(b)) => a.canonical_cmp(b),
                _ => a.cmp(b),
            };
            order.sort_unstable_by(|a, b| canonical(b, a));
            let mut skipping: Option<Vec<u8>> = None;
            for record in list.iter() {
                if let Some(owner) = &skipping {
                    if tern_wire::name::eq_ignore_case(owner, record.owner.as_bytes()) {
                        continue;
                    }
                    skipping = None;
                }
                while order
                    .last()
                    .is_some_and(|owner| canonical(owner, record.owner.as_bytes()).is_lt())
                {
                    let owner = order.pop().unwrap_or_default();
                    for record in patched.remove(&owner).iter().flat_map(Records::iter) {
                        Sink::record(&mut records, record).map_err(damaged)?;
                    }
                }
                let lower = record.owner.to_lower();
                match patched.remove(lower.as_bytes()) {
                    Some(replacement) => {
                        for record in replacement.iter() {
                            Sink::record(&mut records, record).map_err(damaged)?;
                        }
                        skipping = Some(lower.as_bytes().to_vec());
                    }
                    None => Sink::record(&mut records, record).map_err(damaged)?,
                }
            }
            // Those after the list's last owner.
            while let Some(owner) = order.pop() {
                for record in patched.remove(&owner).iter().flat_map(Records::iter) {
                    Sink::record(&mut records, record).map_err(damaged)?;
                }
            }
        }
        if !io::BufRead::fill_buf(&mut reader)?.is_empty() {
            return Err(damaged("kept records: more than written"));
        }
        Ok(records)
    }
}

//----------- saved copies ----------------------------------------------------

/// The first octets of a saved copy ([`KeptRecords::save`]); the record
/// count follows (8 octets, big-endian), then the records as kept.
const SAVED_MAGIC: &[u8; 8] = b"ternkep1";

/// The octets of a saved copy's header.
const SAVED_HEADER: u64 = 16;

/// The fewest octets a kept record takes: an owner length of 0 (the
/// previous owner) and the fixed fields.
const MIN_RECORD: u64 = 11;

impl KeptRecords {
    /// Copies the records to `path` (through a temporary file and a
    /// rename, readable by this process's user only), with a header, so
    /// that a restart can take them as the previous signed version
    /// ([`KeptRecords::open_saved`]). Bound: one pass over the file.
    /// Only a list without patches is saved (a whole signing's): a
    /// patched one is an error, and the copy saved before stays, an
    /// older signed version the next start signs from all the same.
    pub fn save(&self, path: &Path) -> io::Result<()> {
        if !self.patches.is_empty() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "kept records: a patched list is not saved",
            ));
        }
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        let mut temporary = path.as_os_str().to_owned();
        temporary.push(".tmp");
        let temporary = std::path::PathBuf::from(temporary);
        let file = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(&temporary)?;
        let mut out = BufWriter::with_capacity(WRITE_BUFFER, file);
        out.write_all(SAVED_MAGIC)?;
        out.write_all(&(self.records as u64).to_be_bytes())?;
        io::copy(
            &mut At {
                file: &self.file.file,
                at: self.start,
                end: self.length,
            },
            &mut out,
        )?;
        let file = out.into_inner().map_err(|err| err.into_error())?;
        file.sync_data()?;
        drop(file);
        std::fs::rename(&temporary, path)
    }

    /// The records saved at `path` by [`KeptRecords::save`]: `Ok(None)`
    /// if there is no such file. A header that does not read, or a
    /// record count the file cannot hold, is an error; the records
    /// themselves are checked as they are read ([`KeptRecords::read`]).
    pub fn open_saved(path: &Path) -> io::Result<Option<KeptRecords>> {
        let file = match File::open(path) {
            Ok(file) => file,
            Err(err) if err.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(err) => return Err(err),
        };
        let length = file.metadata()?.len();
        let mut header = [0u8; SAVED_HEADER as usize];
        if length < SAVED_HEADER {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "a saved copy too short",
            ));
        }
        file.read_exact_at(&mut header, 0)?;
        if &header[..8] != SAVED_MAGIC {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "not a saved copy of tern's",
            ));
        }
        let count = u64::from_be_bytes(header[8..].try_into().expect("8 octets"));
        if count > (length - SAVED_HEADER) / MIN_RECORD {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "a saved copy with more records than it can hold",
            ));
        }
        let records = usize::try_from(count)
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "a saved copy too large"))?;
        Ok(Some(KeptRecords {
            file: Arc::new(Shared {
                file,
                end: AtomicU64::new(length),
            }),
            length,
            base: records,
            records,
            patches: Vec::new(),
            written: 0,
            start: SAVED_HEADER,
        }))
    }
}

/// Reads `count` records in the kept format from `reader` into `records`.
/// Bound: `count` records of at most 255 + 10 + 65535 octets each.
fn read_records(reader: &mut impl Read, count: usize, records: &mut dyn Sink) -> io::Result<()> {
    let damaged = |what: &str| io::Error::new(io::ErrorKind::InvalidData, what.to_string());
    let mut owner = Vec::new();
    let mut rdata = Vec::new();
    for _ in 0..count {
        let mut length = [0u8];
        reader.read_exact(&mut length)?;
        if length[0] != 0 {
            owner.resize(usize::from(length[0]), 0);
            reader.read_exact(&mut owner)?;
            Name::from_wire(&owner).map_err(|_| damaged("kept records: a bad owner"))?;
        } else if owner.is_empty() {
            return Err(damaged("kept records: no owner"));
        }
        let mut fixed = [0u8; 10];
        reader.read_exact(&mut fixed)?;
        let field = |at: usize| u16::from_be_bytes([fixed[at], fixed[at + 1]]);
        rdata.resize(usize::from(field(8)), 0);
        reader.read_exact(&mut rdata)?;
        let record = RecordRef {
            owner: Name::from_validated(&owner),
            class: RClass(field(0)),
            ttl: u32::from_be_bytes([fixed[2], fixed[3], fixed[4], fixed[5]]),
            rtype: RType(field(6)),
            rdata: &rdata,
            location: Location::default(),
        };
        records.record(record).map_err(damaged)?;
    }
    Ok(())
}

/// A file read from `at` up to `end` at positions.
struct At<'f> {
    file: &'f File,
    at: u64,
    end: u64,
}

impl Read for At<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let left = usize::try_from(self.end.saturating_sub(self.at)).unwrap_or(usize::MAX);
        let want = buf.len().min(left);
        if want == 0 {
            return Ok(0);
        }
        let read = self.file.read_at(&mut buf[..want], self.at)?;
        self.at += read as u64;
        Ok(read)
    }
}

//=========== Tests ==========================================================

#[cfg(test)]
mod tests {
    use tern_zone::RecordList;

    use super::*;

    impl KeptRecords {
        fn clone_for_test(&self) -> KeptRecords {
            KeptRecords {
                file: Arc::clone(&self.file),
                patches: self.patches.clone(),
                ..*self
            }
        }
    }

    fn name(text: &str) -> tern_wire::name::NameBuf {
        tern_wire::name::NameBuf::from_text(text.as_bytes(), None).unwrap()
    }

    /// What is written is read back, record for record (owners shared or
    /// not, RDATA empty or long), twice, and once more handed to a sink;
    /// the file is gone from the directory as soon as it is made.
    #[test]
    fn records_come_back_as_written() {
        let dir = std::env::temp_dir().join(format!("tern-kept-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let (a, b) = (name("a.Example."), name("b.example."));
        let long = vec![7u8; 65535];
        let written: Vec<(tern_wire::name::Name<'_>, RType, u32, &[u8])> = vec![
            (a.as_name(), RType::A, 300, &[192, 0, 2, 1]),
            (a.as_name(), RType::RRSIG, 300, &long),
            (b.as_name(), RType::NSEC, 0, &[]),
            (a.as_name(), RType::TXT, u32::MAX, b"\x02hi"),
        ];
        let mut writer = KeptWriter::create(&dir).unwrap();
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0);
        for &(owner, rtype, ttl, rdata) in &written {
            Sink::record(
                &mut writer,
                RecordRef {
                    owner,
                    class: RClass::IN,
                    ttl,
                    rtype,
                    rdata,
                    location: Location::default(),
                },
            )
            .unwrap();
        }
        let kept = writer.finish().unwrap();
        assert_eq!(kept.len(), written.len());
        for pass in 0..3 {
            let records = if pass < 2 {
                kept.read().unwrap()
            } else {
                let mut streamed = Records::new();
                kept.read_into(&mut streamed).unwrap();
                streamed
            };
            assert_eq!(records.len(), written.len());
            for (index, &(owner, rtype, ttl, rdata)) in written.iter().enumerate() {
                let record = records.record(index);
                assert_eq!(record.owner.as_bytes(), owner.as_bytes());
                assert_eq!(
                    (record.class, record.rtype, record.ttl, record.rdata),
                    (RClass::IN, rtype, ttl, rdata)
                );
            }
        }
        std::fs::remove_dir(&dir).unwrap();
    }

    /// A patch replaces its owners' records where they were (an owner
    /// spelled in another case too), the others' stay; a second patch
    /// wins over the first; each version reads its own list, the earlier
    /// one unchanged by the later's patch; only the patch is written.
    #[test]
    fn patches_replace_their_owners() {
        let dir = std::env::temp_dir().join(format!("tern-kept-patch-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let names = [name("a.example."), name("b.example."), name("c.example.")];
        fn record<'a>(owner: Name<'a>, rtype: RType, rdata: &'static [u8]) -> RecordRef<'a> {
            RecordRef {
                owner,
                class: RClass::IN,
                ttl: 300,
                rtype,
                rdata,
                location: Location::default(),
            }
        }
        let mut writer = KeptWriter::create(&dir).unwrap();
        for owner in &names {
            for rdata in [&b"\x01"[..], b"\x02"] {
                Sink::record(&mut writer, record(owner.as_name(), RType::A, rdata)).unwrap();
            }
        }
        let kept = writer.finish().unwrap();
        let listed = |kept: &KeptRecords| {
            let records = kept.read().unwrap();
            (0..records.len())
                .map(|index| {
                    let record = records.record(index);
                    (
                        record.owner.to_lower().as_bytes().to_vec(),
                        record.rtype,
                        record.rdata.to_vec(),
                    )
                })
                .collect::<Vec<_>>()
        };
        let before = listed(&kept);
        let upper = name("B.example.");
        let once = kept
            .patched(
                &[(
                    upper.as_name(),
                    vec![record(upper.as_name(), RType::TXT, b"\x01x")],
                )],
                5,
            )
            .unwrap();
        assert!(once.written() < kept.written() / 2);
        let after = listed(&once);
        assert_eq!(after.len(), 5);
        assert_eq!(after[..2], before[..2]);
        assert_eq!(
            after[2],
            (
                names[1].as_name().to_lower().as_bytes().to_vec(),
                RType::TXT,
                b"\x01x".to_vec()
            )
        );
        assert_eq!(after[3..], before[4..]);
        let twice = once
            .patched(
                &[(
                    names[1].as_name(),
                    vec![record(names[1].as_name(), RType::A, b"\x09")],
                )],
                5,
            )
            .unwrap();
        assert_eq!(listed(&twice)[2].2, b"\x09".to_vec());
        assert_eq!(listed(&once), after, "the earlier version reads its own");
        assert_eq!(listed(&kept), before);
        assert_eq!((twice.patch_count(), kept.patch_count()), (2, 0));
        std::fs::remove_dir(&dir).unwrap();
    }

    /// A file cut short, or holding more than was written, fails to read.
    #[test]
    fn damage_is_an_error() {
        let dir = std::env::temp_dir().join(format!("tern-kept-cut-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let owner = name("a.example.");
        let mut writer = KeptWriter::create(&dir).unwrap();
        for _ in 0..3 {
            Sink::record(
                &mut writer,
                RecordRef {
                    owner: owner.as_name(),
                    class: RClass::IN,
                    ttl: 1,
                    rtype: RType::A,
                    rdata: &[1, 2, 3, 4],
                    location: Location::default(),
                },
            )
            .unwrap();
        }
        let kept = writer.finish().unwrap();
        let cut = KeptRecords {
            length: kept.length - 1,
            ..kept.clone_for_test()
        };
        assert!(cut.read().is_err());
        assert!(cut.read_into(&mut Records::new()).is_err());
        let fewer = KeptRecords {
            base: 2,
            records: 2,
            ..kept.clone_for_test()
        };
        assert!(fewer.read().is_err());
        assert_eq!(kept.read().unwrap().len(), 3);
        std::fs::remove_dir(&dir).unwrap();
    }
}
