//! Throwaway PostgreSQL servers for tests, built from the machine's own PostgreSQL binaries.
//!
//! [`Cluster::start`] runs `initdb` into a fresh private directory `/tmp/stpg-XXXXXX` and starts
//! the server there with `pg_ctl -w start`; dropping the [`Cluster`] stops the server
//! (`-m immediate`) and removes the directory. The server listens on a Unix socket in that
//! directory only ([`Cluster::start_with_tcp`] adds `127.0.0.1` at a free port), trusts every local
//! connection, and never flushes to disk (`fsync` and `full_page_writes` off): a commit
//! survives a crash of the server (`synchronous_commit` stays on, so it is in the WAL, in the
//! page cache, before the client hears of it), not a crash of the machine, which is what a test
//! needs.
//!
//! The binaries come from `SKILLTRIAL_PG_BINDIR`, else `pg_config --bindir`, else Debian's
//! `/usr/lib/postgresql/<newest>/bin`, else `PATH` (`scripts/test.sh` installs the Debian
//! package `postgresql`). `initdb` refuses to run as root, so when the test process is root the
//! directory is given to the `postgres` user and `initdb`, `pg_ctl` and the server run as that
//! user; otherwise they run as the test's own user. Clients (`psql` here, tokio-postgres in
//! tests) connect as the superuser [`SUPERUSER`] from the test's own user.
//!
//! A test process that dies without dropping its clusters (SIGKILL, `process::exit`, a cluster
//! kept in a `static`) leaves no server behind: each cluster has a watchdog shell that holds the
//! read end of a pipe whose only write end is in the test process; when that process ends, for
//! any reason, the pipe closes and the watchdog stops the server and removes the directory. If
//! the watchdog was killed too, the next [`Cluster::start`] on the machine removes every
//! `/tmp/stpg-*` directory whose owning process is gone (stopping its server first), see
//! [`remove_stale_clusters`].
//!
//! Every function is synchronous and needs no async runtime: call it from any test.

#![cfg(unix)]

mod process;

use std::fmt::Write as _;
use std::fs;
use std::io::Write as _;
use std::net::{Ipv4Addr, SocketAddr, TcpListener};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, SystemTime};

/// The superuser `initdb` creates; every connection string names it.
pub const SUPERUSER: &str = "skilltrial";

/// The directory prefix under [`TEMP_ROOT`]. Unix socket paths are limited to about 107 bytes,
/// so the directory holding the socket must stay short: `/tmp/stpg-XXXXXX/.s.PGSQL.NNNNN` is 32.
const DIR_PREFIX: &str = "stpg-";

/// Where clusters live: always `/tmp`, never `$TMPDIR` (on macOS that alone is ~50 bytes).
const TEMP_ROOT: &str = "/tmp";

/// The file in a cluster's directory naming the process that owns the cluster.
const OWNER_FILE: &str = "owner";

/// A directory without an owner file is only judged abandoned after this long: the owner file
/// is written right after the directory is created, so only a crash in between leaves none.
const OWNERLESS_GRACE: Duration = Duration::from_secs(600);

/// The port of a socket-only cluster. It names the socket file (`.s.PGSQL.5432`) in the
/// cluster's private directory and binds nothing, so every cluster can use it.
const SOCKET_ONLY_PORT: u16 = 5432;

/// Attempts at a TCP start: a free port found by binding port 0 can be taken by someone else
/// before the server binds it.
const TCP_START_ATTEMPTS: u32 = 5;

/// Lines of the server log quoted in an error.
const LOG_TAIL_LINES: usize = 25;

/// What the watchdog does once the test process is gone (its stdin reaches end of file):
/// immediate shutdown of the postmaster named in `postmaster.pid` (SIGQUIT, as `pg_ctl stop
/// -m immediate` sends; only if that process is a `postgres`, where /proc can tell), then the
/// directory is removed. `$1` is the cluster's directory.
const WATCHDOG_SCRIPT: &str = r#"cat >/dev/null 2>&1
pid=$(head -n 1 "$1/data/postmaster.pid" 2>/dev/null)
case "$pid" in ''|*[!0-9]*) pid= ;; esac
if [ -n "$pid" ] && [ -d /proc/self ] && [ "$(cat "/proc/$pid/comm" 2>/dev/null)" != postgres ]; then pid= ; fi
if [ -n "$pid" ] && kill -QUIT "$pid" 2>/dev/null; then
    n=0
    while [ "$n" -lt 100 ] && kill -0 "$pid" 2>/dev/null && ! grep -q '^[^)]*) Z' "/proc/$pid/stat" 2>/dev/null; do
        sleep 0.1 2>/dev/null || sleep 1
        n=$((n + 1))
    done
    kill -KILL "$pid" 2>/dev/null
fi
rm -rf "$1"
"#;

/// One running (or deliberately stopped) PostgreSQL server and the directory it lives in.
///
/// Invariant: `dir` is a directory this process created under `/tmp`, holding `data/` (the
/// cluster), `server.log` and the server's Unix socket; it is removed on drop, after the server
/// is stopped.
#[derive(Debug)]
pub struct Cluster {
    dir: PathBuf,
    bindir: PathBuf,
    port: u16,
    tcp: bool,
    /// The `postgres` user's uid and gid when this process is root (initdb refuses root).
    run_as: Option<(u32, u32)>,
    /// Stops the server if this process dies without dropping the cluster (see the crate doc).
    watchdog: Option<Child>,
}

impl Cluster {
    /// Creates a cluster and starts its server, listening on a Unix socket only.
    pub fn start() -> Result<Cluster, String> {
        Cluster::create(false)
    }

    /// Like [`Cluster::start`], and the server also listens on `127.0.0.1` at a free port
    /// (plain TCP, no TLS): see [`Cluster::tcp_addr`] and [`Cluster::tcp_url`].
    pub fn start_with_tcp() -> Result<Cluster, String> {
        Cluster::create(true)
    }

    fn create(tcp: bool) -> Result<Cluster, String> {
        remove_stale_clusters();
        let bindir = find_bindir()?;
        let dir = tempfile::Builder::new()
            .prefix(DIR_PREFIX)
            .permissions(fs::Permissions::from_mode(0o700))
            .tempdir_in(TEMP_ROOT)
            .map_err(|e| format!("creating the cluster directory under {TEMP_ROOT}: {e}"))?
            .keep();
        // From here on, dropping `cluster` removes the directory (and stops a started server).
        let mut cluster = Cluster {
            dir,
            bindir,
            port: SOCKET_ONLY_PORT,
            tcp,
            run_as: None,
            watchdog: None,
        };
        let owner = process::own_identity();
        fs::write(cluster.dir.join(OWNER_FILE), owner.to_line())
            .map_err(|e| format!("writing {}: {e}", cluster.dir.join(OWNER_FILE).display()))?;
        cluster.watchdog = Some(cluster.spawn_watchdog()?);

        let dir_uid = fs::metadata(&cluster.dir)
            .map_err(|e| format!("reading {}: {e}", cluster.dir.display()))?
            .uid();
        if dir_uid == 0 {
            let (uid, gid) = process::lookup_user("postgres").ok_or_else(|| {
                "running as root, and there is no `postgres` user to run the server as (initdb \
                 refuses root): install the Debian package postgresql, which creates it"
                    .to_string()
            })?;
            std::os::unix::fs::chown(&cluster.dir, Some(uid), Some(gid)).map_err(|e| {
                format!("giving {} to the postgres user: {e}", cluster.dir.display())
            })?;
            cluster.run_as = Some((uid, gid));
        }

        cluster.initdb()?;
        if tcp {
            cluster.start_on_free_port()?;
        } else {
            cluster.write_settings()?;
            cluster.pg_ctl_start()?;
        }
        Ok(cluster)
    }

    fn spawn_watchdog(&self) -> Result<Child, String> {
        let mut watchdog = Command::new("/bin/sh");
        watchdog
            .arg("-c")
            .arg(WATCHDOG_SCRIPT)
            .arg("stpg-watchdog")
            .arg(&self.dir)
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            // Its own process group: a Ctrl-C in the terminal ends the test process, and the
            // watchdog must outlive it to clean up (the postmaster is in its own session too).
            .process_group(0);
        watchdog
            .spawn()
            .map_err(|e| format!("starting the cluster's watchdog (/bin/sh): {e}"))
    }

    fn initdb(&self) -> Result<(), String> {
        let mut initdb = self.server_command("initdb");
        initdb
            .arg("-D")
            .arg(self.data_dir())
            .args([
                "-U",
                SUPERUSER,
                "--auth=trust",
                "--no-sync",
                "--no-instructions",
            ])
            .args(["-E", "UTF8", "--no-locale"]);
        run("initdb", &mut initdb).map(|_| ())
    }

    /// Appends this cluster's settings to `postgresql.conf` (a later line wins over an earlier
    /// one, so a second call with another port takes effect).
    fn write_settings(&self) -> Result<(), String> {
        let listen = if self.tcp { "127.0.0.1" } else { "" };
        let mut settings = String::from("\n# skilltrial-pgtest: a throwaway test server\n");
        for (name, value) in [
            ("listen_addresses", format!("'{listen}'")),
            ("port", self.port.to_string()),
            ("unix_socket_directories", conf_string(&self.dir)?),
            // Nothing is flushed to disk: only an OS crash could lose data, and tests do not
            // survive one anyway.
            ("fsync", "off".into()),
            ("full_page_writes", "off".into()),
            // synchronous_commit stays on: with fsync off it costs one write() to the page
            // cache per commit, and it keeps "committed survives a crash of the server" true,
            // which tests that kill the server (`stop_immediate`) rely on. Off, the last
            // commits before an immediate stop are lost.
            ("synchronous_commit", "on".into()),
            ("max_connections", "200".into()),
            ("shared_buffers", "'32MB'".into()),
        ] {
            let _ = writeln!(settings, "{name} = {value}");
        }
        let conf = self.data_dir().join("postgresql.conf");
        fs::OpenOptions::new()
            .append(true)
            .open(&conf)
            .and_then(|mut file| file.write_all(settings.as_bytes()))
            .map_err(|e| format!("writing the settings into {}: {e}", conf.display()))
    }

    fn start_on_free_port(&mut self) -> Result<(), String> {
        let mut attempt = 1;
        loop {
            self.port = free_loopback_port()?;
            self.write_settings()?;
            match self.pg_ctl_start() {
                Ok(()) => return Ok(()),
                Err(_)
                    if attempt < TCP_START_ATTEMPTS
                        && self.log_tail().contains("Address already in use") =>
                {
                    attempt += 1;
                }
                Err(error) => return Err(error),
            }
        }
    }

    fn pg_ctl_start(&self) -> Result<(), String> {
        let mut start = self.pg_ctl();
        start
            .arg("-l")
            .arg(self.log_path())
            .args(["-t", "120", "start"]);
        run("starting the server (pg_ctl start)", &mut start)
            .map(|_| ())
            .map_err(|e| self.with_log_tail(e))
    }

    fn pg_ctl(&self) -> Command {
        let mut pg_ctl = self.server_command("pg_ctl");
        pg_ctl.arg("-D").arg(self.data_dir()).arg("-w");
        pg_ctl
    }

    /// A command for one of the server's binaries, run as the server's user, in the cluster's
    /// directory (the test's working directory may be closed to the `postgres` user), with no
    /// `PG*` variables of the caller's environment.
    fn server_command(&self, binary: &str) -> Command {
        let mut command = self.client_command(binary);
        if let Some((uid, gid)) = self.run_as {
            command.uid(uid).gid(gid);
        }
        command
    }

    fn client_command(&self, binary: &str) -> Command {
        let mut command = Command::new(self.bindir.join(binary));
        command
            .current_dir(&self.dir)
            .env_clear()
            .env("LC_ALL", "C");
        if let Some(path) = std::env::var_os("PATH") {
            command.env("PATH", path);
        }
        command
    }

    /// The directory of the server's Unix socket (also the cluster's own directory).
    pub fn socket_dir(&self) -> &Path {
        &self.dir
    }

    /// The cluster's data directory (`initdb`'s `-D`).
    pub fn data_dir(&self) -> PathBuf {
        self.dir.join("data")
    }

    /// The server's log file.
    pub fn log_path(&self) -> PathBuf {
        self.dir.join("server.log")
    }

    /// The server's port: it names the socket file, and for a [`Cluster::start_with_tcp`]
    /// cluster it is also the TCP port on `127.0.0.1`.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// `127.0.0.1:<port>` when the server listens on TCP ([`Cluster::start_with_tcp`]).
    pub fn tcp_addr(&self) -> Option<SocketAddr> {
        self.tcp
            .then_some(SocketAddr::from((Ipv4Addr::LOCALHOST, self.port)))
    }

    /// A key=value connection string for database `db` over the Unix socket, as libpq and
    /// tokio-postgres read it: `host=<socket dir> port=<port> user=skilltrial dbname=<db>`.
    pub fn conninfo(&self, db: &str) -> String {
        format!(
            "host={} port={} user={} dbname={}",
            conninfo_value(&self.dir.to_string_lossy()),
            self.port,
            conninfo_value(SUPERUSER),
            conninfo_value(db)
        )
    }

    /// A `postgres://` URL for database `db` over the Unix socket: the socket directory is
    /// the host, percent-encoded (`postgres://skilltrial@%2Ftmp%2Fstpg-abc123:5432/db`), which
    /// tokio-postgres and libpq both read as a socket directory.
    pub fn url(&self, db: &str) -> String {
        format!(
            "postgres://{}@{}:{}/{}",
            percent_encode(SUPERUSER),
            percent_encode(&self.dir.to_string_lossy()),
            self.port,
            percent_encode(db)
        )
    }

    /// A `postgres://skilltrial@127.0.0.1:<port>/<db>` URL when the server listens on TCP.
    pub fn tcp_url(&self, db: &str) -> Option<String> {
        self.tcp_addr().map(|addr| {
            format!(
                "postgres://{}@{addr}/{}",
                percent_encode(SUPERUSER),
                percent_encode(db)
            )
        })
    }

    /// Creates database `name` (owned by [`SUPERUSER`]) and returns its [`Cluster::conninfo`].
    pub fn create_database(&self, name: &str) -> Result<String, String> {
        check_database_name(name)?;
        self.psql(
            "postgres",
            &format!("CREATE DATABASE {}", quote_identifier(name)),
        )
        .map_err(|e| format!("creating database {name:?}: {e}"))?;
        Ok(self.conninfo(name))
    }

    /// Runs `sql` (one or more statements; the first error stops it) in database `db` with
    /// `psql`, and returns what it printed: each result row on a line, columns separated by
    /// `|`, no headers, no command tags, without the last newline.
    pub fn psql(&self, db: &str, sql: &str) -> Result<String, String> {
        let mut psql = self.client_command("psql");
        psql.args(["-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-f", "-"])
            .arg("-d")
            .arg(self.conninfo(db))
            .env("PGCLIENTENCODING", "UTF8")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let step = format!("psql in database {db:?}");
        let mut child = psql.spawn().map_err(|e| {
            format!(
                "{step}: running {}: {e}",
                self.bindir.join("psql").display()
            )
        })?;
        let stdin = child.stdin.take();
        // Written from another thread: psql may fill its output pipe before it has read all of
        // its input, and both sides would wait forever.
        let output = std::thread::scope(|scope| {
            let writer = scope.spawn(move || match stdin {
                Some(mut stdin) => stdin.write_all(sql.as_bytes()),
                None => Ok(()),
            });
            let output = child.wait_with_output();
            (output, writer.join())
        });
        let output = match output {
            (Ok(output), _) => output,
            (Err(e), _) => return Err(format!("{step}: waiting for psql: {e}")),
        };
        if !output.status.success() {
            return Err(format!(
                "{step}: psql {}: {}",
                output.status,
                String::from_utf8_lossy(&output.stderr).trim()
            ));
        }
        let stdout = String::from_utf8_lossy(&output.stdout);
        Ok(stdout.strip_suffix('\n').unwrap_or(&stdout).to_string())
    }

    /// Restarts the server (`pg_ctl restart -m fast`): open connections are closed, committed
    /// data stays.
    pub fn restart(&self) -> Result<(), String> {
        let mut restart = self.pg_ctl();
        restart
            .arg("-l")
            .arg(self.log_path())
            .args(["-t", "120", "-m", "fast", "restart"]);
        run(
            "restarting the server (pg_ctl restart -m fast)",
            &mut restart,
        )
        .map(|_| ())
        .map_err(|e| self.with_log_tail(e))
    }

    /// Stops the server cleanly (`pg_ctl stop -m fast`), keeping the cluster: see
    /// [`Cluster::start_again`].
    pub fn stop(&self) -> Result<(), String> {
        self.pg_ctl_stop("fast")
    }

    /// Stops the server the way a crash would (`pg_ctl stop -m immediate`: no checkpoint, the
    /// next start recovers from the WAL), keeping the cluster.
    pub fn stop_immediate(&self) -> Result<(), String> {
        self.pg_ctl_stop("immediate")
    }

    fn pg_ctl_stop(&self, mode: &str) -> Result<(), String> {
        let mut stop = self.pg_ctl();
        stop.args(["-t", "120", "-m", mode, "stop"]);
        run(
            &format!("stopping the server (pg_ctl stop -m {mode})"),
            &mut stop,
        )
        .map(|_| ())
        .map_err(|e| self.with_log_tail(e))
    }

    /// Starts the server of a cluster stopped with [`Cluster::stop`] or
    /// [`Cluster::stop_immediate`], on the same socket and port.
    pub fn start_again(&self) -> Result<(), String> {
        self.pg_ctl_start()
    }

    /// The postmaster's process id, from `postmaster.pid` (present while the server runs).
    pub fn server_pid(&self) -> Result<u32, String> {
        let pid_file = self.data_dir().join("postmaster.pid");
        let text = fs::read_to_string(&pid_file)
            .map_err(|e| format!("reading {}: {e}", pid_file.display()))?;
        text.lines()
            .next()
            .and_then(|line| line.trim().parse().ok())
            .ok_or_else(|| format!("{}: no process id on its first line", pid_file.display()))
    }

    /// The last lines of the server log (empty when there is none yet).
    pub fn log_tail(&self) -> String {
        let log = fs::read_to_string(self.log_path()).unwrap_or_default();
        let lines: Vec<&str> = log.lines().collect();
        lines[lines.len().saturating_sub(LOG_TAIL_LINES)..].join("\n")
    }

    fn with_log_tail(&self, error: String) -> String {
        let tail = self.log_tail();
        if tail.is_empty() {
            format!(
                "{error}\n(the server log {} is empty)",
                self.log_path().display()
            )
        } else {
            format!(
                "{error}\nlast lines of the server log {}:\n{tail}",
                self.log_path().display()
            )
        }
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        if self.data_dir().join("postmaster.pid").exists() {
            let _ = self.stop_immediate();
        }
        let _ = fs::remove_dir_all(&self.dir);
        // Closing the pipe wakes the watchdog, which finds nothing left to do.
        if let Some(mut watchdog) = self.watchdog.take() {
            drop(watchdog.stdin.take());
            let _ = watchdog.wait();
        }
    }
}

/// Removes every `/tmp/stpg-*` cluster directory whose owning process is gone, stopping its
/// server first when one still runs, and returns the directories removed. [`Cluster::start`]
/// calls it; the watchdogs normally leave nothing for it to do.
///
/// Only directories this process may judge are touched: owned by this process's user (or, for
/// root, by the `postgres` user), with an owner that /proc shows to be gone (a recorded process
/// id whose start time no longer matches counts as gone), or with no owner file for over ten
/// minutes. Without /proc nothing is removed.
pub fn remove_stale_clusters() -> Vec<PathBuf> {
    let Some(own_uid) = process::own_uid() else {
        return Vec::new();
    };
    let mut judged_uids = vec![own_uid];
    if own_uid == 0
        && let Some((postgres_uid, _)) = process::lookup_user("postgres")
    {
        judged_uids.push(postgres_uid);
    }
    let Ok(entries) = fs::read_dir(TEMP_ROOT) else {
        return Vec::new();
    };
    let mut removed = Vec::new();
    for entry in entries.flatten() {
        if !entry.file_name().to_string_lossy().starts_with(DIR_PREFIX) {
            continue;
        }
        let dir = entry.path();
        let Ok(metadata) = fs::symlink_metadata(&dir) else {
            continue;
        };
        if !metadata.is_dir() || !judged_uids.contains(&metadata.uid()) {
            continue;
        }
        let abandoned = match fs::read_to_string(dir.join(OWNER_FILE)) {
            Ok(line) => match process::Identity::from_line(&line) {
                Some(owner) => owner.liveness() == process::Liveness::Gone,
                None => false,
            },
            Err(_) => metadata
                .modified()
                .ok()
                .and_then(|modified| SystemTime::now().duration_since(modified).ok())
                .is_some_and(|age| age > OWNERLESS_GRACE),
        };
        if !abandoned {
            continue;
        }
        process::stop_postmaster(&dir.join("data"), metadata.uid());
        if fs::remove_dir_all(&dir).is_ok() {
            removed.push(dir);
        }
    }
    removed
}

/// Finds the directory holding `initdb`, `pg_ctl`, `postgres` and `psql`.
fn find_bindir() -> Result<PathBuf, String> {
    let has_initdb = |dir: &Path| dir.join("initdb").is_file();
    if let Some(dir) = std::env::var_os("SKILLTRIAL_PG_BINDIR") {
        let dir = PathBuf::from(dir);
        return if has_initdb(&dir) {
            Ok(dir)
        } else {
            Err(format!(
                "SKILLTRIAL_PG_BINDIR={}: there is no initdb in that directory",
                dir.display()
            ))
        };
    }
    if let Ok(output) = Command::new("pg_config").arg("--bindir").output()
        && output.status.success()
    {
        let dir = PathBuf::from(String::from_utf8_lossy(&output.stdout).trim());
        if has_initdb(&dir) {
            return Ok(dir);
        }
    }
    // Debian keeps the server binaries off PATH, one directory per major version.
    if let Ok(entries) = fs::read_dir("/usr/lib/postgresql") {
        let newest = entries
            .flatten()
            .filter_map(|entry| {
                let major: u32 = entry.file_name().to_str()?.parse().ok()?;
                let dir = entry.path().join("bin");
                has_initdb(&dir).then_some((major, dir))
            })
            .max_by_key(|(major, _)| *major);
        if let Some((_, dir)) = newest {
            return Ok(dir);
        }
    }
    if let Some(path) = std::env::var_os("PATH")
        && let Some(dir) = std::env::split_paths(&path).find(|dir| has_initdb(dir))
    {
        return Ok(dir);
    }
    Err(
        "no PostgreSQL server binaries (initdb) found: set SKILLTRIAL_PG_BINDIR to their \
         directory, or install the Debian package postgresql (scripts/test.sh does)"
            .to_string(),
    )
}

/// Runs `command` to completion; a failure names `step` and quotes what the command printed.
fn run(step: &str, command: &mut Command) -> Result<Output, String> {
    let program = command.get_program().to_string_lossy().into_owned();
    let output = command
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("{step}: running {program}: {e}"))?;
    if output.status.success() {
        return Ok(output);
    }
    let mut printed = String::from_utf8_lossy(&output.stderr).trim().to_string();
    let stdout = String::from_utf8_lossy(&output.stdout);
    if !stdout.trim().is_empty() {
        printed = format!("{}\n{printed}", stdout.trim());
    }
    Err(format!("{step}: {program} {}: {printed}", output.status))
}

fn free_loopback_port() -> Result<u16, String> {
    TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
        .and_then(|listener| listener.local_addr())
        .map(|addr| addr.port())
        .map_err(|e| format!("finding a free port on 127.0.0.1: {e}"))
}

/// `path` as a postgresql.conf string literal.
fn conf_string(path: &Path) -> Result<String, String> {
    let text = path
        .to_str()
        .ok_or_else(|| format!("{}: not valid UTF-8", path.display()))?;
    Ok(format!(
        "'{}'",
        text.replace('\\', "\\\\").replace('\'', "''")
    ))
}

/// One value of a key=value connection string: bare when it can be, else single-quoted with
/// `\` escaping `'` and `\` (the rule libpq and tokio-postgres share).
fn conninfo_value(value: &str) -> String {
    let bare = !value.is_empty()
        && value
            .chars()
            .all(|c| !c.is_whitespace() && c != '\'' && c != '\\' && c != '=');
    if bare {
        value.to_string()
    } else {
        format!("'{}'", value.replace('\\', "\\\\").replace('\'', "\\'"))
    }
}

/// Percent-encodes every byte but the URL's unreserved characters.
fn percent_encode(text: &str) -> String {
    let mut encoded = String::with_capacity(text.len());
    for byte in text.bytes() {
        if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'.' | b'_' | b'~') {
            encoded.push(char::from(byte));
        } else {
            let _ = write!(encoded, "%{byte:02X}");
        }
    }
    encoded
}

fn quote_identifier(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// PostgreSQL truncates identifiers to 63 bytes (NAMEDATALEN - 1) and cannot hold NUL.
fn check_database_name(name: &str) -> Result<(), String> {
    if name.is_empty() {
        return Err("database name: empty".to_string());
    }
    if name.len() > 63 {
        return Err(format!(
            "database name {name:?}: {} bytes, PostgreSQL keeps at most 63",
            name.len()
        ));
    }
    if name.contains('\0') {
        return Err(format!("database name {name:?}: contains a NUL character"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conninfo_values_with_spaces_or_quotes_are_quoted_and_escaped() {
        assert_eq!(conninfo_value("plain"), "plain");
        assert_eq!(conninfo_value(""), "''");
        assert_eq!(conninfo_value("a b"), "'a b'");
        assert_eq!(conninfo_value(r"it's \x"), r"'it\'s \\x'");
        assert_eq!(conninfo_value("k=v"), "'k=v'");
    }

    #[test]
    fn percent_encoding_keeps_only_unreserved_characters() {
        assert_eq!(percent_encode("/tmp/stpg-a_B.~"), "%2Ftmp%2Fstpg-a_B.~");
        assert_eq!(percent_encode("ü ?"), "%C3%BC%20%3F");
    }

    #[test]
    fn database_names_postgres_cannot_hold_are_refused() {
        assert!(check_database_name("").is_err());
        assert!(check_database_name(&"x".repeat(64)).is_err());
        assert!(check_database_name("a\0b").is_err());
        assert!(check_database_name(&"x".repeat(63)).is_ok());
    }
}
