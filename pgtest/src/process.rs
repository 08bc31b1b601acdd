//! Which processes are alive, and who the `postgres` user is, without `libc` or `unsafe`: read
//! from /proc and /etc/passwd, with the `id` and `kill` commands where a file cannot tell.

use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

/// A process named so that a later reuse of its id is not mistaken for it: the id, and its
/// start time in clock ticks since boot (field 22 of /proc/<pid>/stat) where /proc has it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Identity {
    pid: u32,
    start: Option<u64>,
}

/// What /proc says of a process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Liveness {
    Alive,
    /// No such process, a zombie, or another process now holding the id.
    Gone,
    /// There is no /proc to ask.
    Unknown,
}

/// This process.
pub(crate) fn own_identity() -> Identity {
    let pid = std::process::id();
    Identity {
        pid,
        start: stat(pid).map(|stat| stat.start),
    }
}

impl Identity {
    /// The owner file's one line: `pid=<pid> start=<ticks>` (`start=` empty without /proc).
    pub(crate) fn to_line(self) -> String {
        let start = self
            .start
            .map(|start| start.to_string())
            .unwrap_or_default();
        format!("pid={} start={start}\n", self.pid)
    }

    pub(crate) fn from_line(line: &str) -> Option<Identity> {
        let mut pid = None;
        let mut start = None;
        for field in line.split_whitespace() {
            if let Some(value) = field.strip_prefix("pid=") {
                pid = Some(value.parse().ok()?);
            } else if let Some(value) = field.strip_prefix("start=")
                && !value.is_empty()
            {
                start = Some(value.parse().ok()?);
            }
        }
        Some(Identity { pid: pid?, start })
    }

    pub(crate) fn liveness(self) -> Liveness {
        if !Path::new("/proc/self/stat").exists() {
            return Liveness::Unknown;
        }
        match stat(self.pid) {
            None => Liveness::Gone,
            Some(stat) if stat.zombie => Liveness::Gone,
            Some(stat) if self.start.is_some_and(|start| start != stat.start) => Liveness::Gone,
            Some(_) => Liveness::Alive,
        }
    }
}

/// The fields of /proc/<pid>/stat this crate reads.
struct Stat {
    command: String,
    zombie: bool,
    start: u64,
}

fn stat(pid: u32) -> Option<Stat> {
    let text = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // `pid (comm) state ...`: comm may hold spaces and parentheses, so split at the last ')'.
    let open = text.find('(')?;
    let close = text.rfind(')')?;
    let command = text.get(open + 1..close)?.to_string();
    let mut fields = text.get(close + 1..)?.split_whitespace();
    let state = fields.next()?;
    // After the state (field 3), the start time is field 22: 18 fields further on.
    let start = fields.nth(18)?.parse().ok()?;
    Some(Stat {
        command,
        zombie: state == "Z" || state == "X",
        start,
    })
}

/// This process's effective user id, where /proc can tell.
pub(crate) fn own_uid() -> Option<u32> {
    fs::metadata("/proc/self")
        .ok()
        .map(|metadata| metadata.uid())
}

/// `user`'s uid and gid: from /etc/passwd, else from `id` (which also asks NSS).
pub(crate) fn lookup_user(user: &str) -> Option<(u32, u32)> {
    let from_passwd = fs::read_to_string("/etc/passwd").ok().and_then(|passwd| {
        passwd.lines().find_map(|line| {
            let mut fields = line.split(':');
            if fields.next()? != user {
                return None;
            }
            let uid = fields.nth(1)?.parse().ok()?;
            let gid = fields.next()?.parse().ok()?;
            Some((uid, gid))
        })
    });
    from_passwd.or_else(|| Some((id_number("-u", user)?, id_number("-g", user)?)))
}

fn id_number(flag: &str, user: &str) -> Option<u32> {
    let output = Command::new("id")
        .args([flag, user])
        .stderr(Stdio::null())
        .output()
        .ok()?;
    if !output.status.success() {
        return None;
    }
    String::from_utf8_lossy(&output.stdout).trim().parse().ok()
}

/// Stops the postmaster of the cluster in `data_dir` if one runs: SIGQUIT (immediate
/// shutdown), then SIGKILL if it is still there ten seconds later. Only a process that /proc
/// shows to be a `postgres` of user `owner_uid` is signalled, so a stale pid file never gets
/// another process killed.
pub(crate) fn stop_postmaster(data_dir: &Path, owner_uid: u32) {
    let Some(pid) = fs::read_to_string(data_dir.join("postmaster.pid"))
        .ok()
        .and_then(|text| text.lines().next()?.trim().parse::<u32>().ok())
    else {
        return;
    };
    let is_the_postmaster = |pid: u32| {
        stat(pid).is_some_and(|stat| stat.command == "postgres" && !stat.zombie)
            && fs::metadata(format!("/proc/{pid}")).is_ok_and(|m| m.uid() == owner_uid)
    };
    if !is_the_postmaster(pid) {
        return;
    }
    signal("-QUIT", pid);
    for _ in 0..100 {
        if !is_the_postmaster(pid) {
            return;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    signal("-KILL", pid);
}

fn signal(signal: &str, pid: u32) {
    let _ = Command::new("kill")
        .args([signal, &pid.to_string()])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identity_line_round_trips_with_and_without_a_start_time() {
        let with = Identity {
            pid: 42,
            start: Some(7),
        };
        let without = Identity {
            pid: 42,
            start: None,
        };
        assert_eq!(Identity::from_line(&with.to_line()), Some(with));
        assert_eq!(Identity::from_line(&without.to_line()), Some(without));
        assert_eq!(Identity::from_line("start=1"), None);
        assert_eq!(Identity::from_line("pid=x start=1"), None);
    }

    #[test]
    fn this_process_is_alive_and_a_reused_id_is_not_it() {
        let me = own_identity();
        if me.liveness() == Liveness::Unknown {
            return; // no /proc on this system
        }
        assert_eq!(me.liveness(), Liveness::Alive);
        let impostor = Identity {
            pid: me.pid,
            start: me.start.map(|start| start + 1),
        };
        assert_eq!(impostor.liveness(), Liveness::Gone);
    }
}
