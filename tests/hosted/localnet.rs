//! `skilltrial localnet` itself: where it listens, that a paused process is not taken for a dead
//! validator, and that a validator that really crashes ends `localnet` with an error (so its
//! clients see a closed port, not a cluster that only looks alive).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, TcpStream};
use std::process::Command;
use std::time::Duration;

use crate::harness::Localnet;

/// A socket the process holds: TCP listening or UDP bound (client connections are left out).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Bound {
    udp: bool,
    addr: SocketAddr,
}

/// An address as /proc/net/{tcp,udp}{,6} prints it: 32-bit words in this machine's byte order.
fn proc_addr(hex: &str) -> Option<IpAddr> {
    let words = (0..hex.len() / 8)
        .map(|i| u32::from_str_radix(&hex[i * 8..i * 8 + 8], 16).map(u32::to_ne_bytes))
        .collect::<Result<Vec<_>, _>>()
        .ok()?;
    let bytes: Vec<u8> = words.into_iter().flatten().collect();
    match bytes.len() {
        4 => Some(IpAddr::V4(Ipv4Addr::new(
            bytes[0], bytes[1], bytes[2], bytes[3],
        ))),
        16 => Some(IpAddr::V6(Ipv6Addr::from(
            <[u8; 16]>::try_from(bytes.as_slice()).ok()?,
        ))),
        _ => None,
    }
}

/// Every TCP listener and UDP socket of process `pid`, from its file descriptors and the
/// kernel's socket tables.
fn bound_sockets(pid: u32) -> Vec<Bound> {
    let inodes: std::collections::HashSet<String> = std::fs::read_dir(format!("/proc/{pid}/fd"))
        .unwrap()
        .filter_map(|e| std::fs::read_link(e.ok()?.path()).ok())
        .filter_map(|target| {
            let target = target.to_string_lossy().into_owned();
            Some(
                target
                    .strip_prefix("socket:[")?
                    .strip_suffix(']')?
                    .to_owned(),
            )
        })
        .collect();
    let mut bound = Vec::new();
    for (table, udp) in [
        ("tcp", false),
        ("tcp6", false),
        ("udp", true),
        ("udp6", true),
    ] {
        let Ok(text) = std::fs::read_to_string(format!("/proc/{pid}/net/{table}")) else {
            continue;
        };
        for line in text.lines().skip(1) {
            let fields: Vec<&str> = line.split_whitespace().collect();
            let (Some(local), Some(state), Some(inode)) =
                (fields.get(1), fields.get(3), fields.get(9))
            else {
                continue;
            };
            // 0A: a TCP listener; a UDP socket is listed whatever its state.
            if !inodes.contains(*inode) || (!udp && *state != "0A") {
                continue;
            }
            let (ip, port) = local.split_once(':').unwrap();
            bound.push(Bound {
                udp,
                addr: SocketAddr::new(
                    proc_addr(ip).unwrap(),
                    u16::from_str_radix(port, 16).unwrap(),
                ),
            });
        }
    }
    bound
}

/// The device each TCP listener of process `pid` on `0.0.0.0:<port>` is confined to
/// (`SO_BINDTODEVICE`, read through a second handle on the socket taken with `pidfd_getfd`;
/// `None` for a listener on every interface). The kernel's own state, not what localnet says.
fn listener_devices(pid: u32, port: u16) -> Vec<Option<String>> {
    use rustix::process::{Pid, PidfdFlags, PidfdGetfdFlags, pidfd_getfd, pidfd_open};
    let process = Pid::from_raw(i32::try_from(pid).unwrap()).unwrap();
    let pidfd = pidfd_open(process, PidfdFlags::empty()).unwrap();
    let mut devices = Vec::new();
    for entry in std::fs::read_dir(format!("/proc/{pid}/fd"))
        .unwrap()
        .flatten()
    {
        let Some(number) = entry.file_name().to_str().and_then(|n| n.parse().ok()) else {
            continue;
        };
        let Ok(handle) = pidfd_getfd(&pidfd, number, PidfdGetfdFlags::empty()) else {
            continue;
        };
        let socket = socket2::Socket::from(handle);
        let Some(local) = socket.local_addr().ok().and_then(|a| a.as_socket()) else {
            continue;
        };
        if local == SocketAddr::new(IpAddr::V4(Ipv4Addr::UNSPECIFIED), port)
            && socket.is_listener().unwrap_or(false)
        {
            devices.push(
                socket
                    .device()
                    .unwrap()
                    .map(|d| String::from_utf8_lossy(&d).into_owned()),
            );
        }
    }
    devices
}

/// This machine's address on its default route, if it has one (a UDP `connect` only picks the
/// route: nothing is sent; 192.0.2.1 is a documentation address).
fn own_address() -> Option<IpAddr> {
    let probe = std::net::UdpSocket::bind((Ipv4Addr::UNSPECIFIED, 0)).ok()?;
    probe.connect((Ipv4Addr::new(192, 0, 2, 1), 9)).ok()?;
    let ip = probe.local_addr().ok()?.ip();
    (!ip.is_loopback() && !ip.is_unspecified()).then_some(ip)
}

fn signal(pid: u32, name: &str) {
    let status = Command::new("kill")
        .args([&format!("-{name}"), &pid.to_string()])
        .status()
        .unwrap();
    assert!(status.success(), "kill -{name} {pid}");
}

pub fn binds_survives_a_pause_and_reports_a_crash() {
    // `--bind` takes one address the validator can advertise: every interface is refused.
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(skilltrial_e2e::skilltrial_bin().unwrap())
        .args(["localnet", "--bind", "0.0.0.0", "--ledger"])
        .arg(dir.path().join("ledger"))
        .arg("--home")
        .arg(dir.path().join("home"))
        .current_dir(skilltrial_e2e::workspace_root())
        .output()
        .unwrap();
    assert!(!out.status.success());
    let said = crate::harness::said(&out);
    assert!(
        said.contains("--bind 0.0.0.0: give one address of this machine"),
        "{said}"
    );
    assert!(!dir.path().join("ledger").exists(), "nothing written");

    // Given `localnet --bind 127.0.0.2` (a loopback address other than the default, so the
    // flag is seen to reach every socket it can),
    let mut net = Localnet::start_logged(&["--bind", "127.0.0.2"]);
    let pid = net.pid();
    let info = net.info.clone();
    let bind = IpAddr::V4(Ipv4Addr::new(127, 0, 0, 2));
    // (`0.0.0.0%lo:8899`, as `ss` writes a listener confined to the loopback device)
    let port = |key: &str| -> SocketAddr {
        let said = info["listening"][key].as_str().unwrap();
        said.replace("%lo", "").parse().unwrap()
    };

    // then it reports that address, advertises it in its RPC URL, and every socket it holds
    // is there but for the JSON-RPC and websocket listeners, which the library binds to
    // 0.0.0.0 and localnet confines to the loopback device (as `listening` reports, and as the
    // kernel says when asked from outside the process), and UDP sockets bound to no address
    // (the validator's own outgoing client sockets);
    assert_eq!(info["bind"], "127.0.0.2", "{info}");
    assert!(net.url.starts_with("http://127.0.0.2:"), "{}", net.url);
    let sockets = bound_sockets(pid);
    let rpc = port("rpc");
    let websocket = port("websocket");
    let gossip = port("gossip");
    let tpu_quic = port("tpu_quic");
    for (expected, udp) in [
        (rpc, false),
        (websocket, false),
        (gossip, true),
        (tpu_quic, true),
    ] {
        assert!(
            sockets.contains(&Bound {
                udp,
                addr: expected
            }),
            "`listening` says {expected} ({}), the process holds {sockets:?}",
            if udp { "UDP" } else { "TCP" }
        );
    }
    assert_eq!(rpc.ip(), IpAddr::V4(Ipv4Addr::UNSPECIFIED));
    for (key, listener) in [("rpc", rpc), ("websocket", websocket)] {
        assert_eq!(
            info["listening"][key],
            format!("0.0.0.0%lo:{}", listener.port()),
            "{info}"
        );
        let devices = listener_devices(pid, listener.port());
        assert!(
            !devices.is_empty() && devices.iter().all(|d| d.as_deref() == Some("lo")),
            "the {key} listeners on port {} are confined to {devices:?}, not all to lo",
            listener.port()
        );
    }
    // (and the confined JSON-RPC still answers on loopback: the harness reached it above),
    // and a connection to this machine's own non-loopback address is refused on both ports
    // where an unconfined listener on every interface accepts it.
    match own_address() {
        Some(own) => {
            let open = std::net::TcpListener::bind((Ipv4Addr::UNSPECIFIED, 0)).unwrap();
            let control = SocketAddr::new(own, open.local_addr().unwrap().port());
            TcpStream::connect_timeout(&control, Duration::from_secs(3))
                .unwrap_or_else(|e| panic!("the control listener at {control}: {e}"));
            for listener in [rpc, websocket] {
                let there = SocketAddr::new(own, listener.port());
                let refused = TcpStream::connect_timeout(&there, Duration::from_secs(3));
                assert!(
                    refused.is_err(),
                    "{there} accepted a connection off the loopback device"
                );
            }
        }
        None => {
            #[allow(clippy::print_stderr)]
            {
                eprintln!(
                    "this machine has no non-loopback IPv4 address: the refusal off loopback is not exercised"
                );
            }
        }
    }
    assert_eq!((gossip.ip(), tpu_quic.ip()), (bind, bind));
    let elsewhere: Vec<&Bound> = sockets
        .iter()
        .filter(|s| {
            s.addr.ip() != bind
                && !(!s.udp && (s.addr == rpc || s.addr == websocket))
                && !(s.udp && s.addr.ip().is_unspecified())
        })
        .collect();
    assert!(
        elsewhere.is_empty(),
        "sockets off --bind 127.0.0.2 that `listening` does not report: {elsewhere:?} (all: {sockets:?})"
    );

    // when the process is paused for longer than the stall limit (30 s) and resumed, as by
    // Ctrl-Z and `fg`, then it goes on serving (a pause is not a dead validator);
    signal(pid, "STOP");
    std::thread::sleep(Duration::from_secs(35));
    signal(pid, "CONT");
    assert_eq!(
        net.exited_within(Duration::from_secs(8)),
        None,
        "localnet exited after a pause:\n{}",
        net.stderr()
    );
    let before = net.chain.slot().unwrap();
    std::thread::sleep(Duration::from_secs(2));
    assert!(
        net.chain.slot().unwrap() > before,
        "no new slot after the pause"
    );

    // and when a validator thread really panics — here the accounts service, which cannot
    // create its next storage file once the process may open no more files (prlimit) —
    let limited = Command::new("prlimit")
        .args(["--pid", &pid.to_string(), "--nofile=20:20"])
        .status()
        .unwrap_or_else(|e| panic!("cannot run prlimit (util-linux): {e}"));
    assert!(limited.success());
    let status = net.exited_within(Duration::from_secs(240));
    let stderr = net.stderr();
    // then `localnet` says which thread panicked, where and why, and exits non-zero, closing
    // its port instead of leaving clients waiting on a half-dead validator.
    let status = status.unwrap_or_else(|| {
        panic!("localnet still runs 240 s after its file limit was cut:\n{stderr}")
    });
    // 2: an environment error (with --json its message is a JSON line on stdout).
    assert_eq!(status.code(), Some(2), "{status}:\n{stderr}");
    let said = stderr
        .lines()
        .find(|l| l.starts_with("error: the local validator crashed: thread '"))
        .unwrap_or_else(|| panic!("no crash report on stderr:\n{stderr}"));
    assert!(said.contains("panicked at"), "{said}");
    let rpc_here = SocketAddr::new(bind, rpc.port());
    assert!(
        TcpStream::connect_timeout(&rpc_here, Duration::from_secs(2)).is_err(),
        "{rpc_here} still accepts connections after the crash"
    );
}
