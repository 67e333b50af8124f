//! Dropping root: with `user: NAME` in the configuration, `tern serve`
//! binds its sockets as the user it was started as (root, for port 53),
//! then becomes NAME, with NAME's group and supplementary groups, before
//! any core answers a query and before any zone data is written
//! (docs/config.md, `user`).
//!
//! glibc's `setgroups`, `setgid` and `setuid` change the credentials of
//! every thread of the process (they signal each thread to make the same
//! system call), which is why this module goes through libc and not
//! through raw per-thread system calls. [`drop_to`] checks the outcome
//! for every thread in `/proc/self/task` afterwards.
//!
//! The only `unsafe` of the binary crate; each block says why it is sound.

#![allow(unsafe_code)]

use std::ffi::{CStr, CString};
use std::io;

use anyhow::{bail, Context};

/// The largest buffer offered to `getpwnam_r` (it asks for more with
/// ERANGE); a passwd entry is far smaller.
const MAX_PASSWD_BUFFER: usize = 1 << 20;

/// The most supplementary groups taken (Linux's NGROUPS_MAX is 65536).
const MAX_GROUPS: usize = 65_536;

/// A user to run as: from the password database.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Account {
    /// The user's name, as configured.
    pub(crate) name: String,
    /// Its user id.
    pub(crate) uid: libc::uid_t,
    /// Its primary group.
    pub(crate) gid: libc::gid_t,
    /// Every group it is a member of, the primary one included.
    pub(crate) groups: Vec<libc::gid_t>,
}

/// Looks `name` up in the password and group databases. Fails, naming the
/// user, if there is no such user.
pub(crate) fn lookup(name: &str) -> anyhow::Result<Account> {
    let c_name = CString::new(name).with_context(|| format!("user {name:?}: contains a NUL"))?;
    let (uid, gid) = passwd_ids(&c_name)
        .with_context(|| format!("looking up user {name:?}"))?
        .ok_or_else(|| anyhow::anyhow!("user {name:?} does not exist"))?;
    let groups =
        group_list(&c_name, gid).with_context(|| format!("listing the groups of user {name:?}"))?;
    Ok(Account {
        name: name.to_string(),
        uid,
        gid,
        groups,
    })
}

/// The user and group ids of `name`, or `None` if there is no such user.
fn passwd_ids(name: &CStr) -> io::Result<Option<(libc::uid_t, libc::gid_t)>> {
    let mut size = 1024;
    loop {
        let mut buffer: Vec<libc::c_char> = vec![0; size];
        // SAFETY: an all-zero `passwd` is a valid value (null pointers and
        // zero ids); getpwnam_r overwrites it.
        let mut entry: libc::passwd = unsafe { std::mem::zeroed() };
        let mut result: *mut libc::passwd = std::ptr::null_mut();
        // SAFETY: `name` is NUL-terminated; `entry`, `buffer` (of the
        // length passed) and `result` are live, writable and exclusively
        // ours for the call; the strings getpwnam_r stores point into
        // `buffer`, which we do not read.
        let status = unsafe {
            libc::getpwnam_r(
                name.as_ptr(),
                &mut entry,
                buffer.as_mut_ptr(),
                buffer.len(),
                &mut result,
            )
        };
        match status {
            0 if result.is_null() => return Ok(None),
            0 => return Ok(Some((entry.pw_uid, entry.pw_gid))),
            libc::ERANGE if size < MAX_PASSWD_BUFFER => size *= 4,
            // glibc reports "no such user" as one of these when the
            // database has no entry (getpwnam_r(3), ERRORS).
            libc::ENOENT | libc::ESRCH | libc::EBADF | libc::EPERM => return Ok(None),
            code => return Err(io::Error::from_raw_os_error(code)),
        }
    }
}

/// The groups `name` is a member of, with `gid` (its primary group) first.
fn group_list(name: &CStr, gid: libc::gid_t) -> io::Result<Vec<libc::gid_t>> {
    let mut count: libc::c_int = 32;
    // Bounded: each retry asks for the count the previous call reported,
    // capped at MAX_GROUPS.
    for _ in 0..4 {
        let len = usize::try_from(count).unwrap_or(0).clamp(1, MAX_GROUPS);
        let mut groups: Vec<libc::gid_t> = vec![0; len];
        let mut found = libc::c_int::try_from(len).unwrap_or(libc::c_int::MAX);
        // SAFETY: `name` is NUL-terminated; `groups` holds `found` writable
        // entries, the bound getgrouplist respects, and `found` is ours.
        let status =
            unsafe { libc::getgrouplist(name.as_ptr(), gid, groups.as_mut_ptr(), &mut found) };
        let found_len = usize::try_from(found).unwrap_or(0);
        if status >= 0 {
            groups.truncate(found_len.min(len));
            return Ok(groups);
        }
        if found_len <= len {
            // Failed without asking for more room: nothing better to try.
            return Err(io::Error::other("getgrouplist failed"));
        }
        count = found;
    }
    Err(io::Error::other("the user's group list keeps growing"))
}

/// The process's real, effective, saved and filesystem ids, as
/// `/proc/self/status` shows them.
fn current_ids() -> (libc::uid_t, libc::uid_t, libc::gid_t, libc::gid_t) {
    // SAFETY: these four calls take no arguments and cannot fail.
    unsafe {
        (
            libc::getuid(),
            libc::geteuid(),
            libc::getgid(),
            libc::getegid(),
        )
    }
}

/// Makes every thread of the process `account`: its supplementary groups,
/// then its group, then its user (in that order: after `setuid` the others
/// are no longer allowed). Does nothing if the process already runs as
/// that user and group (started by systemd with `User=`). Then checks
/// every thread's credentials and that root cannot be regained.
pub(crate) fn drop_to(account: &Account) -> anyhow::Result<()> {
    let (uid, euid, gid, egid) = current_ids();
    if (uid, euid, gid, egid) == (account.uid, account.uid, account.gid, account.gid) {
        log::info!("already running as user {}", account.name);
        return Ok(());
    }
    let context = || {
        format!(
            "dropping privileges to user {} (uid {}, gid {}): tern must start as root to \
             change user",
            account.name, account.uid, account.gid
        )
    };
    // SAFETY: `groups` holds `len` initialized gids for the whole call.
    let status = unsafe { libc::setgroups(account.groups.len(), account.groups.as_ptr()) };
    check(status, "setgroups").with_context(context)?;
    // SAFETY: setgid takes a plain integer.
    let status = unsafe { libc::setgid(account.gid) };
    check(status, "setgid").with_context(context)?;
    // SAFETY: setuid takes a plain integer.
    let status = unsafe { libc::setuid(account.uid) };
    check(status, "setuid").with_context(context)?;

    if account.uid != 0 {
        // SAFETY: setuid takes a plain integer; success here is the error
        // reported below (and the process then exits).
        if unsafe { libc::setuid(0) } == 0 {
            bail!("{}: root could be regained after setuid", context());
        }
    }
    verify_threads(account).with_context(context)?;
    log::info!(
        "running as user {} (uid {}, gid {})",
        account.name,
        account.uid,
        account.gid
    );
    Ok(())
}

/// A libc status (0 or -1 with errno) as a result.
fn check(status: libc::c_int, call: &str) -> anyhow::Result<()> {
    if status == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error()).with_context(|| call.to_string())
    }
}

/// Every thread in `/proc/self/task` has `account`'s ids in all four
/// places (real, effective, saved, filesystem). Without procfs there is
/// nothing to read, and the system calls' own results stand.
fn verify_threads(account: &Account) -> anyhow::Result<()> {
    let tasks = match std::fs::read_dir("/proc/self/task") {
        Ok(tasks) => tasks,
        Err(err) => {
            log::warn!("cannot list this process's threads to check their user: {err}");
            return Ok(());
        }
    };
    for task in tasks {
        let task = task.context("listing /proc/self/task")?;
        let path = task.path().join("status");
        let status = match std::fs::read_to_string(&path) {
            Ok(status) => status,
            // The thread ended between the listing and the read (the
            // file is gone, or reading it reports the thread gone: ESRCH).
            Err(err)
                if err.kind() == io::ErrorKind::NotFound
                    || err.raw_os_error() == Some(libc::ESRCH) =>
            {
                continue
            }
            Err(err) => return Err(err).with_context(|| format!("reading {}", path.display())),
        };
        for (key, want) in [("Uid:", account.uid), ("Gid:", account.gid)] {
            if !ids_are(&status, key, want) {
                bail!(
                    "thread {} still has other ids: {}",
                    task.file_name().to_string_lossy(),
                    status
                        .lines()
                        .find(|line| line.starts_with(key))
                        .unwrap_or(key)
                );
            }
        }
    }
    Ok(())
}

/// Whether the `key` line of a `/proc/.../status` text lists `want` for
/// every one of its ids.
fn ids_are(status: &str, key: &str, want: u32) -> bool {
    status
        .lines()
        .find_map(|line| line.strip_prefix(key))
        .map(|ids| {
            let ids: Vec<&str> = ids.split_whitespace().collect();
            ids.len() == 4 && ids.iter().all(|id| id.parse() == Ok(want))
        })
        .unwrap_or(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn root_is_in_the_password_database() {
        let root = lookup("root").unwrap();
        assert_eq!((root.uid, root.gid), (0, 0));
        assert!(root.groups.contains(&0));
    }

    #[test]
    fn a_missing_user_is_an_error_naming_it() {
        let err = lookup("tern-no-such-user-x").unwrap_err();
        assert_eq!(
            format!("{err:#}"),
            "user \"tern-no-such-user-x\" does not exist"
        );
        assert!(lookup("bad\0name").is_err());
    }

    #[test]
    fn status_lines_are_read_in_full() {
        let status = "Name:\tx\nUid:\t65534\t65534\t65534\t65534\nGid:\t0\t65534\t0\t0\n";
        assert!(ids_are(status, "Uid:", 65534));
        assert!(!ids_are(status, "Gid:", 65534));
        assert!(!ids_are(status, "Uid:", 0));
        assert!(!ids_are("Uid:\t1\t1\n", "Uid:", 1));
        assert!(!ids_are("", "Uid:", 1));
    }

    #[test]
    fn the_running_process_matches_itself() {
        let (uid, euid, gid, egid) = current_ids();
        if uid == euid && gid == egid {
            let me = Account {
                name: "me".into(),
                uid,
                gid,
                groups: Vec::new(),
            };
            // Already that user: nothing to do, nothing to fail.
            drop_to(&me).unwrap();
            verify_threads(&me).unwrap();
        }
    }
}
