//! Listing the zones: the configured zones and the zone directory's files.

use super::*;

//----------- Listing --------------------------------------------------------

/// Byte strings kept in one buffer: the names of 100,000 zone files or
/// their origins are two allocations, not 100,000 (a reload then leaves no
/// holes of them in the heap).
#[derive(Default)]
pub(super) struct Strings {
    bytes: Vec<u8>,
    ends: Vec<usize>,
}

impl Strings {
    fn push(&mut self, string: &[u8]) {
        self.bytes.extend_from_slice(string);
        self.ends.push(self.bytes.len());
    }

    pub(super) fn get(&self, index: usize) -> &[u8] {
        let start = index.checked_sub(1).map_or(0, |before| self.ends[before]);
        &self.bytes[start..self.ends[index]]
    }
}

/// [`Strings`] of text.
#[derive(Default)]
pub(super) struct Texts {
    text: String,
    ends: Vec<usize>,
}

impl Texts {
    fn push(&mut self, string: &str) {
        self.text.push_str(string);
        self.ends.push(self.text.len());
    }

    fn get(&self, index: usize) -> &str {
        let start = index.checked_sub(1).map_or(0, |before| self.ends[before]);
        // Both ends are where a whole `str` was pushed: char boundaries.
        self.text.get(start..self.ends[index]).unwrap_or_default()
    }

    pub(super) fn len(&self) -> usize {
        self.ends.len()
    }
}

/// The first eight bytes of `name` (zeros after a shorter one) as a
/// big-endian number: two names whose numbers differ are in the order of
/// their numbers.
pub(super) fn name_prefix(name: &str) -> u64 {
    let mut prefix = [0; 8];
    let len = name.len().min(8);
    prefix[..len].copy_from_slice(&name.as_bytes()[..len]);
    u64::from_be_bytes(prefix)
}

/// The zone files a configuration names, in the order they are loaded:
/// every `NAME.zone` in the zone directory in name order, then the listed
/// ones. Reading the directory keeps only the names.
pub(super) struct Listing<'c> {
    dir: Option<&'c Path>,
    /// The directory's zone names (file names without `.zone`), in name
    /// order (laid out in it: the passes over them read memory in order) ...
    stems: Texts,
    /// ... and their files' stamps, read as the directory is (a `stat`
    /// relative to it, cheaper than one by the whole path).
    stamps: Vec<Option<FileStamp>>,
    listed: &'c [(String, PathBuf)],
}

impl<'c> Listing<'c> {
    pub(super) fn read(sources: &'c Sources) -> Result<Self, LoadError> {
        let mut stems = Texts::default();
        let mut stamps = Vec::new();
        if let Some(dir) = &sources.dir {
            let failed = |error| LoadError::Directory {
                dir: dir.clone(),
                error,
            };
            let entries = std::fs::read_dir(dir).map_err(failed)?;
            for entry in entries {
                let entry = entry.map_err(failed)?;
                let file_name = entry.file_name();
                let Some(stem) = file_name.to_str().and_then(|f| f.strip_suffix(ZONE_SUFFIX))
                else {
                    continue;
                };
                if stem.is_empty() {
                    continue;
                }
                // The entry's stamp, from a stat relative to the directory;
                // a symbolic link is followed (by its whole path).
                let meta = match entry.file_type() {
                    Ok(kind) if kind.is_symlink() => std::fs::metadata(entry.path()).ok(),
                    Ok(kind) if kind.is_file() => entry.metadata().ok(),
                    _ => None,
                };
                if let Some(meta) = meta.filter(std::fs::Metadata::is_file) {
                    stems.push(stem);
                    stamps.push(FileStamp::of_metadata(&meta));
                }
                crate::work::visit(1);
            }
        }
        // Sorted by their first eight bytes, read as a number (in the
        // order of the names: a file name holds no NUL), then by the
        // whole name: most comparisons read no name.
        let mut order: Vec<(u64, usize)> = (0..stems.len())
            .map(|i| (name_prefix(stems.get(i)), i))
            .collect();
        order.sort_unstable_by(|&(a_prefix, a), &(b_prefix, b)| {
            crate::work::visit(1);
            a_prefix
                .cmp(&b_prefix)
                .then_with(|| stems.get(a).cmp(stems.get(b)))
        });
        let mut sorted = Texts::default();
        for &(_, i) in &order {
            sorted.push(stems.get(i));
        }
        Ok(Listing {
            dir: sources.dir.as_deref(),
            stems: sorted,
            stamps: order.iter().map(|&(_, i)| stamps[i]).collect(),
            listed: &sources.listed,
        })
    }

    pub(super) fn len(&self) -> usize {
        self.stems.len() + self.listed.len()
    }

    /// The origin as written (the file name, or the list's) of entry `i`.
    pub(super) fn text(&self, i: usize) -> &str {
        if i < self.stems.len() {
            self.stems.get(i)
        } else {
            &self.listed[i - self.stems.len()].0
        }
    }

    /// The file of entry `i`.
    pub(super) fn path(&self, i: usize) -> PathBuf {
        let mut path = PathBuf::new();
        self.path_into(i, &mut path);
        path
    }

    /// The file of entry `i`, written into `path` (whose allocation a loop
    /// over the entries reuses).
    pub(super) fn path_into(&self, i: usize, path: &mut PathBuf) {
        path.clear();
        match self.dir.filter(|_| i < self.stems.len()) {
            Some(dir) => {
                path.push(dir);
                path.push(self.text(i));
                path.as_mut_os_string().push(ZONE_SUFFIX);
            }
            None => path.push(&self.listed[i - self.stems.len()].1),
        }
    }

    /// The stamp of entry `i`'s file (`path`) now: read with the directory
    /// for the directory's zones, by its path for the listed ones.
    pub(super) fn stamp(&self, i: usize, path: &Path) -> Option<FileStamp> {
        if i < self.stems.len() {
            self.stamps.get(i).copied().flatten()
        } else {
            FileStamp::of(path)
        }
    }

    /// Each entry's lowercased wire origin (empty where the name does not
    /// parse), and the first entry of each origin: `first[i]` is `i` for
    /// an entry that is loaded, and the earlier entry that names the same
    /// origin for one that is not. Bound: a parse and a hash look-up per
    /// entry; the origins are kept in one buffer.
    pub(super) fn origins(&self) -> (Strings, Vec<usize>) {
        let mut origins = Strings::default();
        for i in 0..self.len() {
            crate::work::visit(1);
            match parse_origin(self.text(i)) {
                Ok(name) => origins.push(&name.as_name().as_bytes().to_ascii_lowercase()),
                Err(_) => origins.push(&[]),
            }
        }
        let mut first: Vec<usize> = (0..self.len()).collect();
        {
            let mut seen: hashbrown::HashMap<&[u8], usize> =
                hashbrown::HashMap::with_capacity(self.len());
            for (i, first) in first.iter_mut().enumerate() {
                let origin = origins.get(i);
                if !origin.is_empty() {
                    *first = *seen.entry(origin).or_insert(i);
                }
            }
        }
        (origins, first)
    }
}

/// The zone files a configuration names, by lowercased origin, without
/// reading them all: what a reload of one zone looks up.
pub struct ZoneFiles<'c> {
    sources: &'c Sources,
}

impl<'c> ZoneFiles<'c> {
    /// The files of `sources`.
    pub fn new(sources: &'c Sources) -> Self {
        ZoneFiles { sources }
    }

    /// The origin as configured and the file of the zone `origin`
    /// (lowercased wire form), if the configuration names it: in the zone
    /// directory (tried by name first, read whole only if that fails, as
    /// for a file name in another case), else in the list.
    pub fn find(&self, origin: &[u8]) -> Result<Option<(String, PathBuf)>, LoadError> {
        if let Some(dir) = &self.sources.dir {
            let text = origin_text(origin);
            let bare = text.strip_suffix('.').unwrap_or(&text);
            for stem in [bare, text.as_str()] {
                let path = dir.join(format!("{stem}{ZONE_SUFFIX}"));
                if path.is_file() {
                    return Ok(Some((stem.to_string(), path)));
                }
            }
        }
        // Another spelling (case) of the name, or a listed zone.
        let listing = Listing::read(self.sources)?;
        let found = (0..listing.len()).find(|&i| {
            parse_origin(listing.text(i))
                .is_ok_and(|name| name.as_name().as_bytes().eq_ignore_ascii_case(origin))
        });
        Ok(found.map(|i| (listing.text(i).to_string(), listing.path(i))))
    }
}
