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
//! The format is this process's own, never read by another: per record,
//! the owner's length (0: the previous record's owner) and the owner in
//! wire form, class, TTL, type, RDATA length and RDATA, big-endian. It is
//! read back checked all the same (lengths bounded, names validated, the
//! record count as written), so a file damaged on disk fails the signing
//! that reads it, which keeps the version served, rather than misleading
//! it.

use std::fs::{File, OpenOptions};
use std::io::{self, BufWriter, Read, Write};
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

use tern_wire::name::Name;
use tern_wire::types::{RClass, RType};
use tern_zone::{Location, RecordRef, Records, Sink};

/// Octets buffered before each write to the file.
const WRITE_BUFFER: usize = 1 << 20;

/// Octets read from the file at a time.
const READ_CHUNK: usize = 1 << 20;

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
            file,
            length,
            records: self.records,
            start: 0,
        })
    }

    fn write(&mut self, record: RecordRef<'_>) -> io::Result<()> {
        let owner = record.owner.as_bytes();
        if owner == self.owner.as_slice() {
            self.out.write_all(&[0])?;
        } else {
            // A wire name is 1 to 255 octets.
            self.out.write_all(&[owner.len() as u8])?;
            self.out.write_all(owner)?;
            self.owner.clear();
            self.owner.extend_from_slice(owner);
        }
        let length = u16::try_from(record.rdata.len())
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "RDATA exceeds 65535"))?;
        let mut fixed = [0; 10];
        fixed[0..2].copy_from_slice(&record.class.0.to_be_bytes());
        fixed[2..6].copy_from_slice(&record.ttl.to_be_bytes());
        fixed[6..8].copy_from_slice(&record.rtype.0.to_be_bytes());
        fixed[8..10].copy_from_slice(&length.to_be_bytes());
        self.out.write_all(&fixed)?;
        self.out.write_all(record.rdata)
    }
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

/// Records written by a [`KeptWriter`], read back by [`KeptRecords::read`].
pub struct KeptRecords {
    file: File,
    length: u64,
    records: usize,
    /// Where the records begin in `file` (after a saved copy's header).
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

    /// The octets on disk.
    pub fn size(&self) -> u64 {
        self.length
    }

    /// The records, in the order written. Reads at positions (no shared
    /// cursor), so several readers may read at once. Bound: one pass over
    /// the file, at most the record count written.
    pub fn read(&self) -> io::Result<Records> {
        let mut records = Records::new();
        Sink::reserve(&mut records, self.records);
        let mut reader = io::BufReader::with_capacity(
            READ_CHUNK,
            At {
                file: &self.file,
                at: self.start,
                end: self.length,
            },
        );
        let damaged = |what: &str| io::Error::new(io::ErrorKind::InvalidData, what.to_string());
        let mut owner = Vec::new();
        let mut rdata = Vec::new();
        for _ in 0..self.records {
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
            Sink::record(&mut records, record).map_err(damaged)?;
        }
        if io::BufRead::fill_buf(&mut reader)?.is_empty() {
            Ok(records)
        } else {
            Err(damaged("kept records: more than written"))
        }
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
    pub fn save(&self, path: &Path) -> io::Result<()> {
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
                file: &self.file,
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
        Ok(Some(KeptRecords {
            file,
            length,
            records: usize::try_from(count).map_err(|_| {
                io::Error::new(io::ErrorKind::InvalidData, "a saved copy too large")
            })?,
            start: SAVED_HEADER,
        }))
    }
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

    fn name(text: &str) -> tern_wire::name::NameBuf {
        tern_wire::name::NameBuf::from_text(text.as_bytes(), None).unwrap()
    }

    /// What is written is read back, record for record (owners shared or
    /// not, RDATA empty or long), and twice; the file is gone from the
    /// directory as soon as it is made.
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
        for _ in 0..2 {
            let records = kept.read().unwrap();
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

    /// A saved copy reads back as kept; none is `None`; a copy with
    /// another header or a count it cannot hold is an error.
    #[test]
    fn saved_copies_read_back() {
        let dir = std::env::temp_dir().join(format!("tern-kept-saved-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let owner = name("a.example.");
        let mut writer = KeptWriter::create(&dir).unwrap();
        for ttl in [1, 2, 3] {
            let record = RecordRef {
                owner: owner.as_name(),
                class: RClass::IN,
                ttl,
                rtype: RType::A,
                rdata: &[192, 0, 2, 1],
                location: Location::default(),
            };
            Sink::record(&mut writer, record).unwrap();
        }
        let kept = writer.finish().unwrap();
        let path = dir.join("sub").join("a.example.kept");
        assert!(KeptRecords::open_saved(&path).unwrap().is_none());
        kept.save(&path).unwrap();
        let saved = KeptRecords::open_saved(&path).unwrap().unwrap();
        let records = saved.read().unwrap();
        assert_eq!(records.len(), 3);
        assert_eq!(records.record(2).ttl, 3);
        let mut bytes = std::fs::read(&path).unwrap();
        bytes[15] = 200;
        std::fs::write(&path, &bytes).unwrap();
        assert!(KeptRecords::open_saved(&path).is_err());
        bytes[0] = b'x';
        std::fs::write(&path, &bytes).unwrap();
        assert!(KeptRecords::open_saved(&path).is_err());
        std::fs::remove_dir_all(&dir).unwrap();
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
            file: kept.file.try_clone().unwrap(),
            length: kept.length - 1,
            records: 3,
            start: 0,
        };
        assert!(cut.read().is_err());
        let fewer = KeptRecords {
            file: kept.file.try_clone().unwrap(),
            length: kept.length,
            records: 2,
            start: 0,
        };
        assert!(fewer.read().is_err());
        assert_eq!(kept.read().unwrap().len(), 3);
        std::fs::remove_dir(&dir).unwrap();
    }
}
