//! Real throwaway PostgreSQL servers: started, connected to with tokio-postgres over the socket
//! and over TCP, restarted, stopped, dropped, and left behind by a killed process.

#![cfg(unix)]
// Helpers outside #[test] functions may fail loudly too.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use skilltrial_pgtest::{Cluster, remove_stale_clusters};
use tokio_postgres::{Client, Config, NoTls};

/// How long a test waits for a process or directory to go away before it fails. A bound on
/// waiting on a loaded machine, not a timing assertion.
const PATIENCE: Duration = Duration::from_secs(60);

/// Connects with `connection_string`, runs `query` for one text value, and returns it.
fn query_one(connection_string: &str, query: &str) -> Result<String, tokio_postgres::Error> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let client = connect(connection_string).await?;
        let row = client.query_one(query, &[]).await?;
        Ok(row.get::<_, String>(0))
    })
}

async fn connect(connection_string: &str) -> Result<Client, tokio_postgres::Error> {
    let (client, connection) = tokio_postgres::connect(connection_string, NoTls).await?;
    tokio::spawn(connection);
    Ok(client)
}

/// Whether process `pid` still runs (a zombie does not).
fn process_runs(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => !stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with(['Z', 'X'])),
        Err(_) => false,
    }
}

fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + PATIENCE;
    while !done() {
        assert!(Instant::now() < deadline, "still waiting: {what}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn two_databases_are_created_and_each_answers_over_the_socket() {
    // Given a started cluster with two new databases
    let cluster = Cluster::start().unwrap();
    let alpha = cluster.create_database("alpha").unwrap();
    let beta = cluster.create_database("beta").unwrap();
    assert_eq!(alpha, cluster.conninfo("alpha"));

    // When a table is made in one of them
    cluster
        .psql(
            "alpha",
            "CREATE TABLE t (v text); INSERT INTO t VALUES ('in alpha');",
        )
        .unwrap();

    // Then tokio-postgres reaches each database over the Unix socket, by conninfo and by URL,
    // and the table is only in the one it was made in
    assert_eq!(query_one(&alpha, "SELECT v FROM t").unwrap(), "in alpha");
    assert_eq!(
        query_one(&cluster.url("alpha"), "SELECT current_database()::text").unwrap(),
        "alpha"
    );
    assert_eq!(
        query_one(&beta, "SELECT current_database()::text").unwrap(),
        "beta"
    );
    let missing = query_one(&cluster.url("beta"), "SELECT v FROM t").unwrap_err();
    assert_eq!(
        missing.as_db_error().map(|e| e.code()),
        Some(&tokio_postgres::error::SqlState::UNDEFINED_TABLE),
        "{missing:?}"
    );
    // and the connection went through the socket in the cluster's directory, as the superuser
    assert_eq!(
        query_one(
            &beta,
            "SELECT current_setting('unix_socket_directories') || ' ' || current_user"
        )
        .unwrap(),
        format!("{} skilltrial", cluster.socket_dir().display())
    );
    assert!(
        cluster
            .socket_dir()
            .join(format!(".s.PGSQL.{}", cluster.port()))
            .exists()
    );
}

#[test]
fn conninfo_and_url_name_the_same_socket_database_and_user() {
    let cluster = Cluster::start().unwrap();
    // A name that needs quoting in a conninfo and percent-encoding in a URL.
    let name = "odd name 'q' \\ ü/x?y=z";
    cluster.create_database(name).unwrap();

    let from_conninfo: Config = cluster.conninfo(name).parse().unwrap();
    let from_url: Config = cluster.url(name).parse().unwrap();
    for config in [&from_conninfo, &from_url] {
        assert_eq!(
            config.get_hosts(),
            [tokio_postgres::config::Host::Unix(
                cluster.socket_dir().to_path_buf()
            )]
        );
        assert_eq!(config.get_ports(), [cluster.port()]);
        assert_eq!(config.get_user(), Some("skilltrial"));
        assert_eq!(config.get_dbname(), Some(name));
    }
    assert_eq!(
        query_one(&cluster.url(name), "SELECT current_database()::text").unwrap(),
        name
    );
    assert_eq!(
        query_one(&cluster.conninfo(name), "SELECT current_database()::text").unwrap(),
        name
    );
    assert_eq!(
        cluster.psql(name, "SELECT current_database()").unwrap(),
        name
    );
}

#[test]
fn two_clusters_run_at_once_and_keep_their_data_apart() {
    let first = Cluster::start().unwrap();
    let second = Cluster::start().unwrap();
    assert_ne!(first.socket_dir(), second.socket_dir());

    first
        .psql("postgres", "CREATE TABLE only_in_first (v int)")
        .unwrap();

    assert_eq!(
        first
            .psql(
                "postgres",
                "SELECT count(*) FROM pg_tables WHERE tablename = 'only_in_first'"
            )
            .unwrap(),
        "1"
    );
    assert_eq!(
        second
            .psql(
                "postgres",
                "SELECT count(*) FROM pg_tables WHERE tablename = 'only_in_first'"
            )
            .unwrap(),
        "0"
    );
    assert_ne!(first.server_pid().unwrap(), second.server_pid().unwrap());
}

#[test]
fn restart_and_stop_then_start_again_keep_committed_data() {
    // Given committed rows
    let cluster = Cluster::start().unwrap();
    cluster
        .psql(
            "postgres",
            "CREATE TABLE kept (v int); INSERT INTO kept VALUES (1), (2);",
        )
        .unwrap();
    let before = cluster.server_pid().unwrap();

    // When the server restarts
    cluster.restart().unwrap();

    // Then it is a new server process with the same rows
    assert_ne!(cluster.server_pid().unwrap(), before);
    assert_eq!(
        cluster.psql("postgres", "SELECT sum(v) FROM kept").unwrap(),
        "3"
    );

    // And a stopped server refuses connections until it is started again, rows still there
    cluster
        .psql("postgres", "INSERT INTO kept VALUES (4)")
        .unwrap();
    cluster.stop().unwrap();
    assert!(cluster.psql("postgres", "SELECT 1").is_err());
    cluster.start_again().unwrap();
    assert_eq!(
        cluster.psql("postgres", "SELECT sum(v) FROM kept").unwrap(),
        "7"
    );

    // And a crash-like stop is recovered from on the next start
    cluster
        .psql("postgres", "INSERT INTO kept VALUES (8)")
        .unwrap();
    cluster.stop_immediate().unwrap();
    cluster.start_again().unwrap();
    assert_eq!(
        cluster.psql("postgres", "SELECT sum(v) FROM kept").unwrap(),
        "15"
    );
}

#[test]
fn drop_stops_the_server_and_removes_the_directory() {
    let cluster = Cluster::start().unwrap();
    let dir = cluster.socket_dir().to_path_buf();
    let pid = cluster.server_pid().unwrap();
    assert!(process_runs(pid));

    drop(cluster);

    assert!(!dir.exists(), "{} is still there", dir.display());
    wait_until(&format!("the postmaster {pid} to exit"), || {
        !process_runs(pid)
    });
}

#[test]
fn a_tcp_cluster_answers_on_loopback_and_on_its_socket() {
    let cluster = Cluster::start_with_tcp().unwrap();
    let addr = cluster.tcp_addr().unwrap();
    assert!(addr.ip().is_loopback());
    assert_eq!(addr.port(), cluster.port());

    let url = cluster.tcp_url("postgres").unwrap();
    assert_eq!(
        query_one(&url, "SELECT coalesce(inet_server_addr()::text, 'socket')").unwrap(),
        "127.0.0.1/32"
    );
    assert_eq!(
        query_one(
            &cluster.url("postgres"),
            "SELECT coalesce(inet_server_addr()::text, 'socket')"
        )
        .unwrap(),
        "socket"
    );
    // A socket-only cluster has no TCP address.
    assert_eq!(Cluster::start().unwrap().tcp_addr(), None);
}

#[test]
fn psql_reports_the_server_error_and_stops_at_it() {
    let cluster = Cluster::start().unwrap();
    let error = cluster
        .psql(
            "postgres",
            "CREATE TABLE a (v int); SELEC 1; CREATE TABLE b (v int);",
        )
        .unwrap_err();
    assert!(error.contains("syntax error"), "{error}");
    assert!(error.contains("psql in database \"postgres\""), "{error}");
    assert_eq!(
        cluster
            .psql("postgres", "SELECT string_agg(tablename, ',' ORDER BY tablename) FROM pg_tables WHERE tablename IN ('a', 'b')")
            .unwrap(),
        "a"
    );
    let refused = cluster.create_database(&"x".repeat(64)).unwrap_err();
    assert!(refused.contains("at most 63"), "{refused}");
}

#[test]
fn psql_can_terminate_a_client_by_application_name() {
    let cluster = Cluster::start().unwrap();
    let conninfo = format!("{} application_name=victim", cluster.conninfo("postgres"));
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let client = connect(&conninfo).await.unwrap();
        client.simple_query("SELECT 1").await.unwrap();

        let terminated = cluster
            .psql(
                "postgres",
                "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name = 'victim'",
            )
            .unwrap();

        assert_eq!(terminated, "1");
        assert!(client.simple_query("SELECT 1").await.is_err());
    });
}

#[test]
fn a_server_that_cannot_start_says_so_with_the_tail_of_its_log() {
    // Given a stopped cluster whose configuration the server refuses
    let cluster = Cluster::start().unwrap();
    cluster.stop().unwrap();
    let conf = cluster.data_dir().join("postgresql.conf");
    let mut text = std::fs::read_to_string(&conf).unwrap();
    text.push_str("\nno_such_setting_here = 1\n");
    std::fs::write(&conf, text).unwrap();

    // When it is started
    let error = cluster.start_again().unwrap_err();

    // Then the error names the step and quotes the server's own complaint from its log
    assert!(
        error.contains("starting the server (pg_ctl start)"),
        "{error}"
    );
    assert!(error.contains("last lines of the server log"), "{error}");
    assert!(error.contains("no_such_setting_here"), "{error}");
}

/// Not a test of its own: the child process of
/// `a_killed_test_process_leaves_no_server_or_directory_behind`, which starts a cluster, says
/// where, and waits to be killed.
#[test]
#[ignore = "run by another test as its child process"]
fn killed_owner_child() {
    if std::env::var_os("SKILLTRIAL_PGTEST_KILLED_OWNER").is_none() {
        return;
    }
    let cluster = Cluster::start().unwrap();
    println!(
        "CLUSTER {} {}",
        cluster.server_pid().unwrap(),
        cluster.socket_dir().display()
    );
    // Waits to be killed; should the parent test die first, its end of stdin closes and this
    // returns, so no child lingers.
    let _ = std::io::Read::read_to_end(&mut std::io::stdin(), &mut Vec::new());
}

#[test]
fn a_killed_test_process_leaves_no_server_or_directory_behind() {
    // Given a process that started a cluster
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "killed_owner_child",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("SKILLTRIAL_PGTEST_KILLED_OWNER", "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = BufReader::new(child.stdout.take().unwrap());
    let line = stdout
        .lines()
        .map(Result::unwrap)
        .find_map(|line| Some(line.split_once("CLUSTER ")?.1.to_string()))
        .expect("the child process never said where its cluster is");
    // libtest writes `test killed_owner_child ... ` on the same line first.
    let mut words = line.split(' ');
    let pid: u32 = words.next().unwrap().parse().unwrap();
    let dir = PathBuf::from(words.next().unwrap());
    assert!(process_runs(pid) && dir.exists());

    // When it is killed without a chance to drop the cluster
    child.kill().unwrap();
    child.wait().unwrap();

    // Then its server stops and its directory goes
    wait_until(&format!("the postmaster {pid} to exit"), || {
        !process_runs(pid)
    });
    wait_until(&format!("{} to be removed", dir.display()), || {
        !dir.exists()
    });
}

#[test]
fn a_stale_directory_of_a_gone_process_is_removed_and_a_live_ones_is_kept() {
    // Given a cluster directory whose owner has exited, and one whose owner is this process
    let mut exited = Command::new("true").spawn().unwrap();
    let exited_pid = exited.id();
    exited.wait().unwrap();
    let stale = stale_dir(&format!("pid={exited_pid} start=0\n"));
    let live = stale_dir(&format!("pid={} start=\n", std::process::id()));

    // When stale clusters are swept (a cluster starting in a parallel test may sweep first)
    remove_stale_clusters();

    // Then only the dead owner's directory is gone
    assert!(!stale.exists(), "{} is still there", stale.display());
    assert!(live.exists());
    std::fs::remove_dir_all(&live).unwrap();
}

fn stale_dir(owner_line: &str) -> PathBuf {
    let dir = tempfile::Builder::new()
        .prefix("stpg-")
        .tempdir_in("/tmp")
        .unwrap()
        .keep();
    std::fs::write(Path::new(&dir).join("owner"), owner_line).unwrap();
    dir
}
