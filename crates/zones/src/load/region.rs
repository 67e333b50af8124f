//! A signed zone's reload that reads only the part of its file that
//! changed (issue 24; docs/decisions/0014-signing.md, "A reload reads the
//! change").
//!
//! After a signed zone is loaded from its file, the exact bytes read are
//! kept as a copy in the state directory (`STATE/signed/ORIGIN.text`,
//! a file of 1 MiB or more written on a thread of its own, which the next
//! reload and the copy's drop wait for, to a temporary file renamed over the
//! last; not in memory: a start's peak is not raised). The copy begins
//! with a token that the version's [`super::EditBase`] holds: a copy that
//! is not the one its version's records were read from (an older write
//! finishing late, another load's) is never used.
//!
//! At the next reload the new file is compared with the copy from each
//! end through one buffer of [`COMPARE_CHUNK`] octets
//! ([`TextCopy::differences`]): only the part of the copy between the
//! octets both start and end with is read into memory, at most
//! [`MAX_REGION_LEN`] octets; the copy is never held whole. The region
//! where they differ, widened to whole entries read with exactly a whole
//! reading's state ([`tern_zone::changed_region_of`]), is read alone in
//! both ([`tern_zone::scan_region`], [`tern_zone::scan_old_region`]). The
//! old region's records must be the previous load's records at the same
//! lines (checked, record for record); the new file's records are then
//! the previous load's with those replaced by the new region's, the lines
//! after moved ([`tern_zone::Records::spliced`]: the records kept are
//! shared with the previous load's list, only the new region's copied),
//! and what differs is the two small lists' [`crate::edited::diff`]: the
//! existing edit path ([`crate::edited`], `load::changed`) signs and
//! checks from there as it would after a whole reading.
//!
//! The whole file is read instead when there is no usable copy, the
//! previous load's records are not as the file wrote them (TTLs settled),
//! the region is before the file's tail (a directive, a parenthesis or a
//! quote after it), or longer than [`MAX_REGION_LEN`] octets, or has an
//! error, or the old region's records are not the previous load's.
//!
//! Bound: the file read, the copy read through one small buffer and
//! compared with it from each end, the region read, its records copied
//! (the previous load's shared, but every [`tern_zone::MAX_PARTS`] / 2
//! reloads or so, or after the list lost more records than it keeps,
//! when it is copied whole again); TTLs settled in such a list copy the
//! runs of records they are in, not the previous load's list.

use std::io::Write;
use std::os::unix::fs::FileExt;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::thread::JoinHandle;

use tern_wire::name::{LowerNameBuf, Name};
use tern_zone::{common_prefix, common_suffix, RecordList, Records};

use crate::edited::Diff;

/// The most octets of each file's changed region read apart; past it, the
/// file is read whole.
pub(super) const MAX_REGION_LEN: usize = 1 << 20;

/// The length of a copy's token.
const TOKEN_LEN: usize = 16;

//----------- TextCopy -------------------------------------------------------

/// The copy of the text a version was read from, being written or
/// written: its token, and the thread writing it.
pub(super) struct TextCopy {
    /// The most octets of the previous load's copy the load that made
    /// this one held in memory at once (0: it did not read it).
    pub(super) held: usize,
    /// The records that load copied from a list into its own (all it
    /// read, when it read the file whole).
    pub(super) copied: usize,
    path: PathBuf,
    token: [u8; TOKEN_LEN],
    writer: Mutex<Option<JoinHandle<()>>>,
}

impl std::fmt::Debug for TextCopy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TextCopy")
            .field("path", &self.path)
            .finish()
    }
}

/// `STATE/signed/ORIGIN.text`.
fn text_path(state_directory: &Path, origin: Name<'_>) -> PathBuf {
    state_directory.join("signed").join(format!(
        "{}text",
        crate::file_stem(LowerNameBuf::from_name(origin))
    ))
}

/// A token no other copy of this process has: a count, the process's id
/// and the time.
fn new_token() -> [u8; TOKEN_LEN] {
    static COUNT: AtomicU64 = AtomicU64::new(0);
    let count = COUNT.fetch_add(1, Ordering::Relaxed);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.subsec_nanos());
    let mut token = [0; TOKEN_LEN];
    token[..8].copy_from_slice(&count.to_be_bytes());
    token[8..12].copy_from_slice(&std::process::id().to_be_bytes());
    token[12..].copy_from_slice(&nanos.to_be_bytes());
    token
}

/// Files shorter than this are kept at once rather than on a thread.
const WRITE_AT_ONCE: usize = 1 << 20;

/// Keeps `data`, the text the zone `origin` was just read from, as its
/// copy: a large one written on a thread of its own (the caller goes on;
/// the next reload, or the copy's drop, waits for it).
pub(super) fn keep_text(
    state_directory: &Path,
    origin: Name<'_>,
    data: Vec<u8>,
    (held, copied): (usize, usize),
) -> TextCopy {
    let path = text_path(state_directory, origin);
    let token = new_token();
    let (to, name) = (path.clone(), origin.to_string());
    let small = data.len() < WRITE_AT_ONCE;
    let write = move || {
        if let Err(err) = write_copy(&to, &token, &data) {
            log::warn!(
                "zone {name}: cannot keep a copy of its file in {}: {err}; the next \
                 reload reads the file whole",
                to.display()
            );
        }
    };
    if small {
        write();
        return TextCopy {
            held,
            copied,
            path,
            token,
            writer: Mutex::new(None),
        };
    }
    let writer = std::thread::Builder::new()
        .name("zone-text".to_string())
        .spawn(write);
    let writer = match writer {
        Ok(writer) => Some(writer),
        Err(err) => {
            log::warn!("zone {origin}: cannot start the thread that keeps its file's copy: {err}");
            None
        }
    };
    TextCopy {
        held,
        copied,
        path,
        token,
        writer: Mutex::new(writer),
    }
}

/// Writes `token` then `data` to a temporary file beside `path`, renamed
/// over it.
fn write_copy(path: &Path, token: &[u8; TOKEN_LEN], data: &[u8]) -> std::io::Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let mut temporary = path.as_os_str().to_owned();
    temporary.push(format!(".tmp{:02x}{:02x}", token[6], token[7]));
    let temporary = PathBuf::from(temporary);
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&temporary)?;
    file.write_all(token)?;
    file.write_all(data)?;
    drop(file);
    std::fs::rename(&temporary, path)
}

impl TextCopy {
    /// Waits for the copy to be written, if it is being written.
    fn wait(&self) {
        let writer = self
            .writer
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .take();
        if let Some(writer) = writer {
            // The thread does not panic; if it did, there is no copy.
            let _ = writer.join();
        }
    }

    /// The text kept (once written, if it is this copy's) told by how it
    /// differs from `new`: compared from each end through one buffer of
    /// [`COMPARE_CHUNK`] octets, only the part between read whole, if it
    /// is at most `max_len` octets; `None` (logged) when the copy is not
    /// there, is another's, or differs over more than `max_len` octets.
    /// Bound: reads of the copy as long as it is, into that buffer, and
    /// of the middle.
    pub(super) fn differences(&self, new: &[u8], max_len: usize) -> Option<Differences> {
        self.wait();
        let file = std::fs::File::open(&self.path)
            .inspect_err(|err| {
                log::debug!(
                    "{}: the file's copy is not read: {err}",
                    self.path.display()
                );
            })
            .ok()?;
        let mut token = [0; TOKEN_LEN];
        file.read_exact_at(&mut token, 0).ok()?;
        if token != self.token {
            log::debug!("{}: a copy other than the version's", self.path.display());
            return None;
        }
        let len = usize::try_from(file.metadata().ok()?.len())
            .ok()?
            .checked_sub(TOKEN_LEN)?;
        let at = |offset: usize| offset as u64 + TOKEN_LEN as u64;
        let shorter = len.min(new.len());
        let mut chunk = vec![0; COMPARE_CHUNK.min(shorter)];
        // The octets both start with.
        let mut prefix = 0;
        while prefix < shorter {
            let n = chunk.len().min(shorter - prefix);
            file.read_exact_at(&mut chunk[..n], at(prefix)).ok()?;
            let same = common_prefix(&chunk[..n], &new[prefix..prefix + n]);
            prefix += same;
            if same < n {
                break;
            }
        }
        // The octets both end with, after those.
        let mut suffix = 0;
        while suffix < shorter - prefix {
            let n = chunk.len().min(shorter - prefix - suffix);
            let (old_at, new_at) = (len - suffix - n, new.len() - suffix - n);
            file.read_exact_at(&mut chunk[..n], at(old_at)).ok()?;
            let same = common_suffix(&chunk[..n], &new[new_at..new_at + n]);
            suffix += same;
            if same < n {
                break;
            }
        }
        let middle_len = len - prefix - suffix;
        if middle_len > max_len {
            log::debug!(
                "{}: {middle_len} octets differ from the file; read whole",
                self.path.display()
            );
            return None;
        }
        let mut middle = vec![0; middle_len];
        file.read_exact_at(&mut middle, at(prefix)).ok()?;
        Some(Differences {
            prefix,
            suffix,
            held: chunk.len() + middle.len(),
            middle,
        })
    }
}

/// The octets of the copy read at once when it is compared with the new
/// file ([`TextCopy::differences`]).
pub(super) const COMPARE_CHUNK: usize = 1 << 16;

/// The text a copy kept, told by how it differs from the new file
/// ([`tern_zone::OldText`]).
pub(super) struct Differences {
    prefix: usize,
    middle: Vec<u8>,
    suffix: usize,
    /// The most octets of the copy held in memory at once.
    pub(super) held: usize,
}

impl Differences {
    fn text(&self) -> tern_zone::OldText<'_> {
        tern_zone::OldText {
            prefix: self.prefix,
            middle: &self.middle,
            suffix: self.suffix,
        }
    }
}

/// A copy dropped (its version replaced, on the zones' owner's thread, or
/// its load failed) waits for its write: no thread writes in the state
/// directory after the load that started it is gone.
impl Drop for TextCopy {
    fn drop(&mut self) {
        self.wait();
    }
}

//----------- read_changed ---------------------------------------------------

/// The new file's records read from its changed region only.
pub(super) struct ReadChanged {
    /// The new file's records, as a whole reading gives them.
    pub(super) records: Records,
    /// What differs from the previous load's records, if the two regions'
    /// records come back in step ([`crate::edited::diff`]).
    pub(super) diff: Option<Diff>,
    /// The records read from text: both regions'.
    pub(super) parsed: usize,
    /// The records copied into the new list (the others are shared with
    /// the previous load's, [`Records::spliced`]).
    pub(super) copied: usize,
}

/// The records of `new` (the file's text now) when `old` is the text the
/// previous load read into `previous` (its records, TTLs as written): read
/// from the region where the two differ, see the module documentation;
/// `None` when the file is to be read whole.
pub(super) fn read_changed(
    origin: Name<'_>,
    path: &Path,
    options: &tern_zone::Options,
    old: &Differences,
    new: &[u8],
    previous: &Records,
) -> Option<ReadChanged> {
    let old_text = old.text();
    let region = tern_zone::changed_region_of(&old_text, new, MAX_REGION_LEN)?;
    let old_bytes = old_text.region_bytes(new, &region)?;
    let mut old_part = Records::new();
    let first_line = tern_zone::scan_old_region(
        new,
        &region,
        &old_bytes,
        path,
        origin,
        options,
        &mut old_part,
    )?;
    let mut new_part = Records::new();
    tern_zone::scan_region(new, region.in_new(), path, origin, options, &mut new_part)?;
    // The old region's records are the previous load's at its lines.
    // Regions are at most MAX_REGION_LEN octets.
    let lines = |data: &[u8]| data.iter().filter(|&&byte| byte == b'\n').count() as i64;
    let old_lines = lines(&old_bytes);
    let start = partition_point(previous, |record| record.location.line < first_line);
    let end = start + old_part.len();
    let same = end <= previous.len()
        && (0..old_part.len()).all(|at| previous.record(start + at) == old_part.record(at))
        && (end == previous.len()
            || i64::from(previous.record(end).location.line) >= i64::from(first_line) + old_lines);
    if !same {
        log::debug!(
            "zone {origin}: the changed part of its file is not where the previous load's \
             records were; read whole"
        );
        return None;
    }
    let shift = lines(&new[region.in_new()]) - old_lines;
    let (records, copied) = previous.spliced(start..end, &new_part, shift)?;
    let diff = crate::edited::diff(&old_part, &new_part).map(|diff| Diff {
        old: diff.old.iter().map(|at| at + start).collect(),
        new: diff.new.iter().map(|at| at + start).collect(),
    });
    log::debug!(
        "zone {origin}: read {} octets of its file changed ({} records for {})",
        region.new_end - region.start,
        new_part.len(),
        old_part.len()
    );
    Some(ReadChanged {
        records,
        diff,
        parsed: old_part.len() + new_part.len(),
        copied,
    })
}

/// The first index of `list` whose record is not `before` (which holds
/// for a prefix of the list). Bound: a binary search.
fn partition_point(list: &Records, before: impl Fn(tern_zone::RecordRef<'_>) -> bool) -> usize {
    let (mut low, mut high) = (0, list.len());
    while low < high {
        let middle = low + (high - low) / 2;
        if before(list.record(middle)) {
            low = middle + 1;
        } else {
            high = middle;
        }
    }
    low
}

//=========== Tests ==========================================================

#[cfg(test)]
mod tests {
    use super::*;

    /// The comparison through one buffer tells the same octets alike as a
    /// comparison of the two texts held whole: for differences at, before
    /// and after [`COMPARE_CHUNK`] boundaries from either end, texts of
    /// very different lengths (one empty), CRLF lines, a last line without
    /// a newline, and the same text; it holds one buffer and the middle,
    /// and refuses a middle longer than its bound.
    #[test]
    fn differences_are_a_whole_comparison() {
        let dir =
            std::env::temp_dir().join(format!("tern-zones-differences-{}", std::process::id()));
        let origin = tern_wire::name::NameBuf::from_text(b"example.", None).unwrap();
        let lines = |n: usize, end: &str| -> Vec<u8> {
            (0..n)
                .map(|i| format!("h{i} A 192.0.2.{}{end}", i % 250))
                .collect::<String>()
                .into_bytes()
        };
        let base = lines(20_000, "\n");
        assert!(base.len() > 4 * COMPARE_CHUNK);
        let changed_at = |text: &[u8], at: usize| {
            let mut text = text.to_vec();
            text[at] ^= 0x20;
            text
        };
        let from_end = |text: &[u8], back: usize| text.len() - 1 - back;
        let mut cases: Vec<(String, Vec<u8>, Vec<u8>)> = Vec::new();
        for at in [
            0,
            1,
            COMPARE_CHUNK - 1,
            COMPARE_CHUNK,
            COMPARE_CHUNK + 1,
            2 * COMPARE_CHUNK,
            3 * COMPARE_CHUNK + 7,
        ] {
            cases.push((format!("at {at}"), base.clone(), changed_at(&base, at)));
            let back = from_end(&base, at);
            cases.push((
                format!("{at} from the end"),
                base.clone(),
                changed_at(&base, back),
            ));
            // Both ends, and an octet added there.
            let both = changed_at(&changed_at(&base, at), back);
            cases.push((format!("at {at} both ends"), base.clone(), both));
            let mut added = base.clone();
            added.insert(at, b'x');
            cases.push((format!("added at {at}"), base.clone(), added));
        }
        let short = b"h0 A 192.0.2.0\n".to_vec();
        cases.push(("long to short".into(), base.clone(), short.clone()));
        cases.push(("short to long".into(), short.clone(), base.clone()));
        cases.push(("empty to long".into(), Vec::new(), base.clone()));
        cases.push(("long to empty".into(), base.clone(), Vec::new()));
        cases.push((
            "prefix of".into(),
            base[..COMPARE_CHUNK + 3].to_vec(),
            base.clone(),
        ));
        cases.push((
            "suffix of".into(),
            base[COMPARE_CHUNK * 2 + 5..].to_vec(),
            base.clone(),
        ));
        let crlf = lines(20_000, "\r\n");
        let mut crlf_changed = crlf.clone();
        let line = b"h9000 A 192.0.2.0\r\n";
        let at = crlf.windows(line.len()).position(|w| w == line).unwrap();
        crlf_changed.splice(
            at..at + line.len(),
            b"h9000 A 192.0.2.1\r\nh9000x TXT y\r\n".iter().copied(),
        );
        cases.push(("CRLF".into(), crlf.clone(), crlf_changed));
        cases.push(("CRLF to LF".into(), crlf, base.clone()));
        let unended = base[..base.len() - 1].to_vec();
        cases.push(("newline removed".into(), base.clone(), unended.clone()));
        cases.push(("newline added".into(), unended.clone(), base.clone()));
        let mut appended = unended.clone();
        appended.extend_from_slice(b"0\nlast A 192.0.2.1");
        cases.push(("unended, appended".into(), unended, appended));
        cases.push(("same".into(), base.clone(), base.clone()));
        for (what, old, new) in &cases {
            let copy = keep_text(&dir, origin.as_name(), old.clone(), (0, 0));
            let told = copy
                .differences(new, usize::MAX)
                .unwrap_or_else(|| panic!("{what}"));
            // Octet by octet, the texts whole.
            let prefix = old.iter().zip(new).take_while(|(a, b)| a == b).count();
            let suffix = old[prefix..]
                .iter()
                .rev()
                .zip(new[prefix..].iter().rev())
                .take_while(|(a, b)| a == b)
                .count();
            assert_eq!((told.prefix, told.suffix), (prefix, suffix), "{what}");
            assert_eq!(told.middle, &old[prefix..old.len() - suffix], "{what}");
            assert_eq!(told.text().len(), old.len(), "{what}");
            let chunk = COMPARE_CHUNK.min(old.len().min(new.len()));
            assert_eq!(told.held, chunk + told.middle.len(), "{what}");
            // Past the bound: none.
            if !told.middle.is_empty() {
                let bound = told.middle.len() - 1;
                assert!(copy.differences(new, bound).is_none(), "{what}");
            }
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}
