//! tern's XDP program on the interfaces: loaded with `aya` from the object
//! that `build.rs` compiles out of `xdp/tern_xdp.c`, told the listen
//! addresses, attached (natively where the driver can, generically
//! otherwise), and detached when the [`Attachment`] is dropped.
//!
//! The program is attached through a BPF link: the kernel detaches it when
//! the link's descriptor closes, which happens when tern exits, however it
//! exits (a crash or `kill -9` included). A later start therefore finds the
//! interface free; there is never a stale program of tern's to replace.
//! Another program on the interface (another tool's, attached without a
//! link) is not taken over: the start fails and names the interface.

use std::io;
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex};

use aya::maps::{MapData, PerCpuArray, XskMap};
use aya::programs::{Xdp, XdpMode};
use aya::{Ebpf, EbpfLoader};

use super::ring::{FRAME_SIZE, XDP_PACKET_HEADROOM};
use crate::sys::Feature;
use tern_wire::frame::{ETHERNET_LEN, IPV6_LEN, UDP_LEN, VLAN_LEN};

/// Listen addresses per family the program matches (`MAX_ADDRESSES` in
/// `tern_xdp.c`).
pub const MAX_XDP_ADDRESSES: usize = 8;

/// Receive queues per interface (the XSKMAP's size in `tern_xdp.c`).
pub const MAX_XDP_QUEUES: u32 = 256;

/// What the program counts when it passes a packet for our addresses to
/// the kernel, in the order of its `tern_passed` map.
pub const XDP_PASSED: [&str; 3] = ["fragment", "ipv4_options", "ipv6_extension"];

/// The compiled program, if clang was there when tern was built.
#[cfg(tern_xdp_program)]
const PROGRAM: Option<&[u8]> = Some(include_bytes!(concat!(env!("OUT_DIR"), "/tern_xdp.o")));
#[cfg(not(tern_xdp_program))]
const PROGRAM: Option<&[u8]> = None;

//----------- Attachment -----------------------------------------------------

/// The program attached to every XDP interface; dropping it detaches them.
pub(crate) struct Attachment {
    interfaces: Vec<Interface>,
}

/// One interface with its own instance of the program (each has its own
/// socket map, keyed by the interface's queue numbers).
pub(crate) struct Interface {
    pub(crate) name: String,
    pub(crate) index: u32,
    pub(crate) queues: u32,
    /// What frames for this host look like on the interface.
    pub(crate) local: Local,
    /// The program's socket map: a core puts its socket for a queue here.
    pub(crate) sockets: Arc<Mutex<XskMap<MapData>>>,
    passed: PerCpuArray<MapData, u64>,
    /// Holds the program and its link: dropped, the program is detached.
    _program: Ebpf,
}

/// One queue a core serves: which interface and socket map.
#[derive(Clone)]
pub(crate) struct QueuePlan {
    pub(crate) interface: String,
    pub(crate) index: u32,
    pub(crate) queue: u32,
    pub(crate) sockets: Arc<Mutex<XskMap<MapData>>>,
    pub(crate) local: Local,
}

/// What the kernel would check of a frame against the interface, and the
/// frame parser cannot know: that it was sent to this host's Ethernet
/// address (not another's, seen on a shared or promiscuous link), and that
/// its IPv4 source is not one of the interface's broadcast addresses.
/// Read when tern starts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Local {
    pub(crate) mac: [u8; 6],
    pub(crate) broadcasts: Vec<[u8; 4]>,
}

impl Attachment {
    /// Loads and attaches the program to each of `names`, matching UDP to
    /// `listen`. `udp_size` is the largest UDP answer: it must fit the
    /// interface's MTU, since the XDP path does not fragment.
    pub(crate) fn attach(
        names: &[String],
        listen: &[SocketAddr],
        udp_size: usize,
    ) -> io::Result<Attachment> {
        let Some(object) = PROGRAM else {
            return Err(io::Error::new(
                io::ErrorKind::Unsupported,
                "xdp: this tern was built without its XDP program (clang was not found \
                 when it was compiled): install clang and build it again",
            ));
        };
        let mut interfaces = Vec::with_capacity(names.len());
        for name in names {
            interfaces.push(Interface::attach(name, object, listen, udp_size)?);
        }
        Ok(Attachment { interfaces })
    }

    /// The queues each of `cores` cores serves: queue `q` of every
    /// interface goes to core `q % cores`.
    pub(crate) fn plan(&self, cores: usize) -> Vec<Vec<QueuePlan>> {
        let mut plans = vec![Vec::new(); cores.max(1)];
        for interface in &self.interfaces {
            for queue in 0..interface.queues {
                plans[queue as usize % cores.max(1)].push(QueuePlan {
                    interface: interface.name.clone(),
                    index: interface.index,
                    queue,
                    sockets: Arc::clone(&interface.sockets),
                    local: interface.local.clone(),
                });
            }
        }
        plans
    }

    /// The packets for our addresses the program passed to the kernel, by
    /// [`XDP_PASSED`], summed over CPUs and interfaces.
    pub(crate) fn passed(&self) -> [u64; 3] {
        let mut counts = [0; 3];
        for interface in &self.interfaces {
            for (index, count) in counts.iter_mut().enumerate() {
                if let Ok(values) = interface.passed.get(&(index as u32), 0) {
                    *count += values.iter().sum::<u64>();
                }
            }
        }
        counts
    }
}

impl Interface {
    fn attach(
        name: &str,
        object: &[u8],
        listen: &[SocketAddr],
        udp_size: usize,
    ) -> io::Result<Interface> {
        let fail = |what: String| io::Error::other(format!("xdp: {name}: {what}"));
        // Interface names are at most 15 octets and never hold a slash
        // (the path below must stay in /sys/class/net).
        if name.is_empty() || name.len() > 15 || name.contains('/') || name.starts_with('.') {
            return Err(fail("not an interface name".into()));
        }
        let sysfs = format!("/sys/class/net/{name}");
        let read = |file: &str| std::fs::read_to_string(format!("{sysfs}/{file}"));
        let index: u32 = read("ifindex")
            .map_err(|_| fail("no such interface".into()))?
            .trim()
            .parse()
            .map_err(|_| fail("cannot read its index".into()))?;
        let mtu: usize = read("mtu")
            .ok()
            .and_then(|mtu| mtu.trim().parse().ok())
            .ok_or_else(|| fail("cannot read its MTU".into()))?;
        let frame_room = FRAME_SIZE - XDP_PACKET_HEADROOM - ETHERNET_LEN - VLAN_LEN;
        if mtu > frame_room {
            return Err(fail(format!(
                "its MTU {mtu} is larger than an XDP frame holds ({frame_room})"
            )));
        }
        if udp_size + IPV6_LEN + UDP_LEN > mtu {
            return Err(fail(format!(
                "udp-size {udp_size} does not fit its MTU {mtu} unfragmented (at most {}); \
                 the XDP path does not fragment: lower udp-size or raise the MTU",
                mtu.saturating_sub(IPV6_LEN + UDP_LEN)
            )));
        }
        let stripping = crate::sys::interface_features(name, VLAN_STRIPPING)
            .map_err(|err| fail(format!("cannot read its features (ethtool -k): {err}")))?;
        if let Some(refusal) = vlan_stripping_refusal(name, stripping) {
            return Err(fail(refusal));
        }
        let mac = read("address")
            .ok()
            .and_then(|text| parse_mac(text.trim()))
            .ok_or_else(|| fail("cannot read its Ethernet address".into()))?;
        let own = crate::sys::interface_addresses(name)
            .map_err(|err| fail(format!("cannot read its addresses: {err}")))?;
        let addresses = Addresses::of(listen, &own).map_err(fail)?;
        let broadcasts = own.broadcasts;
        let queues = std::fs::read_dir(format!("{sysfs}/queues"))
            .map(|entries| {
                entries
                    .filter_map(Result::ok)
                    .filter(|entry| entry.file_name().to_string_lossy().starts_with("rx-"))
                    .count() as u32
            })
            .unwrap_or(1)
            .clamp(1, MAX_XDP_QUEUES);
        let permission = |err: String| {
            if err.contains("Operation not permitted") || err.contains("EPERM") {
                fail(format!(
                    "loading the XDP program needs CAP_BPF and CAP_NET_ADMIN (run tern as \
                     root): {err}"
                ))
            } else {
                fail(format!("cannot load the XDP program: {err}"))
            }
        };
        let mut program = EbpfLoader::new()
            .override_global("tern_mac", &mac, true)
            .override_global("tern_v4_count", &addresses.v4_count, true)
            .override_global("tern_v4_addresses", &addresses.v4, true)
            .override_global("tern_v4_ports", &addresses.v4_ports, true)
            .override_global("tern_v6_count", &addresses.v6_count, true)
            .override_global("tern_v6_addresses", &addresses.v6, true)
            .override_global("tern_v6_ports", &addresses.v6_ports, true)
            .load(object)
            .map_err(|err| permission(error_chain(&err)))?;
        let xdp: &mut Xdp = program
            .program_mut("tern_xdp")
            .ok_or_else(|| fail("the XDP object has no tern_xdp program".into()))?
            .try_into()
            .map_err(|err| fail(format!("tern_xdp is not an XDP program: {err}")))?;
        xdp.load().map_err(|err| permission(error_chain(&err)))?;
        if let Err(native) = xdp.attach(name, XdpMode::Driver) {
            let native = error_chain(&native);
            if native.contains("Device or resource busy") || native.contains("EBUSY") {
                return Err(fail(format!(
                    "another XDP program is attached to it ({native}); detach it first \
                     (ip link set dev {name} xdp off)"
                )));
            }
            log::warn!(
                "xdp: {name}: the driver has no native XDP ({native}); using generic XDP, \
                 which is slower"
            );
            xdp.attach(name, XdpMode::Skb).map_err(|err| {
                fail(format!(
                    "cannot attach the XDP program: {}",
                    error_chain(&err)
                ))
            })?;
        }
        let sockets = program
            .take_map("tern_xsks")
            .ok_or_else(|| fail("the XDP object has no tern_xsks map".into()))?;
        let sockets = XskMap::try_from(sockets).map_err(|err| fail(err.to_string()))?;
        let passed = program
            .take_map("tern_passed")
            .ok_or_else(|| fail("the XDP object has no tern_passed map".into()))?;
        let passed = PerCpuArray::try_from(passed).map_err(|err| fail(err.to_string()))?;
        log::info!("xdp: {name}: attached, {queues} receive queue(s), MTU {mtu}");
        Ok(Interface {
            name: name.to_string(),
            index,
            queues,
            local: Local { mac, broadcasts },
            sockets: Arc::new(Mutex::new(sockets)),
            passed,
            _program: program,
        })
    }
}

/// The features (the kernel's names) with which a device takes the VLAN
/// tag out of a received frame and hands it beside the frame, where the
/// XDP program does not see it: 802.1Q and 802.1ad tags. `ethtool -k`
/// shows them as `rx-vlan-offload` and `rx-vlan-stag-hw-parse`.
const VLAN_STRIPPING: [&str; 2] = ["rx-vlan-hw-parse", "rx-vlan-stag-hw-parse"];

/// What `ethtool -K` calls each of [`VLAN_STRIPPING`].
const VLAN_STRIPPING_ETHTOOL: [&str; 2] = ["rxvlan", "rx-vlan-stag-hw-parse"];

/// Why tern refuses interface `name` whose [`VLAN_STRIPPING`] features are
/// `states`, if it does: with one on, a tagged query reaches the program
/// untagged, and its answer would leave untagged, on the wrong VLAN
/// (docs/decisions/0012-af-xdp.md). A feature this kernel does not have
/// strips nothing.
fn vlan_stripping_refusal(name: &str, states: [Option<Feature>; 2]) -> Option<String> {
    let on: Vec<usize> = (0..states.len())
        .filter(|&index| states[index].is_some_and(|feature| feature.active))
        .collect();
    if on.is_empty() {
        return None;
    }
    let listed = on
        .iter()
        .map(|&index| VLAN_STRIPPING[index])
        .collect::<Vec<_>>()
        .join(", ");
    let problem = format!(
        "the device takes VLAN tags out of received frames before XDP sees them ({listed} \
         on), so answers to tagged queries would leave untagged, on the wrong VLAN"
    );
    if on
        .iter()
        .all(|&index| states[index].is_some_and(|feature| feature.changeable))
    {
        let features = on
            .iter()
            .map(|&index| format!("{} off", VLAN_STRIPPING_ETHTOOL[index]))
            .collect::<Vec<_>>()
            .join(" ");
        Some(format!(
            "{problem}; turn it off first: ethtool -K {name} {features}"
        ))
    } else {
        Some(format!(
            "{problem}; this device cannot turn it off (ethtool -k shows it [fixed]), so tern \
             cannot serve it with XDP"
        ))
    }
}

/// `aa:bb:cc:dd:ee:ff` as sysfs writes an Ethernet address.
fn parse_mac(text: &str) -> Option<[u8; 6]> {
    let mut mac = [0; 6];
    let mut parts = text.split(':');
    for octet in &mut mac {
        *octet = u8::from_str_radix(parts.next()?, 16).ok()?;
    }
    parts.next().is_none().then_some(mac)
}

/// An error with its sources, for a message that says why.
fn error_chain(err: &dyn std::error::Error) -> String {
    let mut message = err.to_string();
    let mut source = err.source();
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        if !message.contains(&cause_text) {
            message.push_str(": ");
            message.push_str(&cause_text);
        }
        source = cause.source();
    }
    message
}

//----------- Addresses ------------------------------------------------------

/// The listen addresses as the program's globals hold them: as the packet
/// holds them (network order), an all-zero address for a wildcard.
struct Addresses {
    v4_count: u32,
    v4: [u32; MAX_XDP_ADDRESSES],
    v4_ports: [u16; MAX_XDP_ADDRESSES],
    v6_count: u32,
    v6: [[u32; 4]; MAX_XDP_ADDRESSES],
    v6_ports: [u16; MAX_XDP_ADDRESSES],
}

impl Addresses {
    /// `listen` as the program matches it on an interface with the
    /// addresses `own`: a wildcard listen address becomes each of the
    /// interface's addresses of its family (with its port), so that the
    /// program never takes a packet for an address not ours (one routed
    /// through this host, say). An address added to the interface later is
    /// not matched: the kernel's sockets answer it.
    fn of(
        listen: &[SocketAddr],
        own: &crate::sys::InterfaceAddresses,
    ) -> Result<Addresses, String> {
        let mut addresses = Addresses {
            v4_count: 0,
            v4: [0; MAX_XDP_ADDRESSES],
            v4_ports: [0; MAX_XDP_ADDRESSES],
            v6_count: 0,
            v6: [[0; 4]; MAX_XDP_ADDRESSES],
            v6_ports: [0; MAX_XDP_ADDRESSES],
        };
        for address in listen {
            let port = u16::from_ne_bytes(address.port().to_be_bytes());
            match address.ip() {
                IpAddr::V4(ip) => {
                    let octets = ip.octets();
                    let expanded = if ip.is_unspecified() {
                        &own.v4[..]
                    } else {
                        std::slice::from_ref(&octets)
                    };
                    for octets in expanded {
                        let value = u32::from_ne_bytes(*octets);
                        let family = (&mut addresses.v4_count, &mut addresses.v4);
                        push(family, &mut addresses.v4_ports, value, port)?;
                    }
                }
                IpAddr::V6(ip) => {
                    let octets = ip.octets();
                    let expanded = if ip.is_unspecified() {
                        &own.v6[..]
                    } else {
                        std::slice::from_ref(&octets)
                    };
                    for octets in expanded {
                        let mut value = [0; 4];
                        for (word, chunk) in value.iter_mut().zip(octets.chunks_exact(4)) {
                            *word = u32::from_ne_bytes([chunk[0], chunk[1], chunk[2], chunk[3]]);
                        }
                        let family = (&mut addresses.v6_count, &mut addresses.v6);
                        push(family, &mut addresses.v6_ports, value, port)?;
                    }
                }
            }
        }
        Ok(addresses)
    }
}

/// Appends one address (as the program reads it) and its port to one
/// family's table: `family` is its count and addresses.
fn push<T>(
    family: (&mut u32, &mut [T; MAX_XDP_ADDRESSES]),
    ports: &mut [u16; MAX_XDP_ADDRESSES],
    value: T,
    port: u16,
) -> Result<(), String> {
    let (count, values) = family;
    let at = *count as usize;
    if at == MAX_XDP_ADDRESSES {
        return Err(format!(
            "more than {MAX_XDP_ADDRESSES} listen addresses per IP family (wildcards count \
             each address of the interface)"
        ));
    }
    values[at] = value;
    ports[at] = port;
    *count += 1;
    Ok(())
}

//=========== Tests ==========================================================

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ethernet_addresses_as_sysfs_writes_them() {
        assert_eq!(
            parse_mac("aa:38:c5:9a:91:b1"),
            Some([0xaa, 0x38, 0xc5, 0x9a, 0x91, 0xb1])
        );
        for bad in [
            "",
            "aa:38:c5:9a:91",
            "aa:38:c5:9a:91:b1:00",
            "zz:38:c5:9a:91:b1",
        ] {
            assert_eq!(parse_mac(bad), None, "{bad}");
        }
    }

    #[test]
    fn an_interface_that_strips_vlan_tags_is_refused() {
        let on = Some(Feature {
            active: true,
            changeable: true,
        });
        let off = Some(Feature {
            active: false,
            changeable: true,
        });
        let fixed_on = Some(Feature {
            active: true,
            changeable: false,
        });
        assert_eq!(vlan_stripping_refusal("eth0", [off, off]), None);
        assert_eq!(vlan_stripping_refusal("eth0", [None, None]), None);
        assert_eq!(vlan_stripping_refusal("eth0", [off, None]), None);
        let refusal = vlan_stripping_refusal("eth0", [on, off]).unwrap();
        assert!(refusal.contains("(rx-vlan-hw-parse on)"), "{refusal}");
        assert!(refusal.ends_with("ethtool -K eth0 rxvlan off"), "{refusal}");
        let refusal = vlan_stripping_refusal("eth0", [on, on]).unwrap();
        assert!(
            refusal.ends_with("ethtool -K eth0 rxvlan off rx-vlan-stag-hw-parse off"),
            "{refusal}"
        );
        let refusal = vlan_stripping_refusal("eth0", [off, on]).unwrap();
        assert!(
            refusal.ends_with("ethtool -K eth0 rx-vlan-stag-hw-parse off"),
            "{refusal}"
        );
        let refusal = vlan_stripping_refusal("eth0", [fixed_on, off]).unwrap();
        assert!(refusal.contains("cannot turn it off"), "{refusal}");
    }

    #[test]
    fn listen_addresses_as_the_program_reads_them() {
        let listen: Vec<SocketAddr> = ["198.51.100.1:53", "0.0.0.0:5353", "[2001:db8::1]:53"]
            .iter()
            .map(|text| text.parse().unwrap())
            .collect();
        let own = crate::sys::InterfaceAddresses {
            v4: vec![[198, 51, 100, 1], [198, 51, 100, 3]],
            v6: vec![],
            broadcasts: vec![[198, 51, 100, 255]],
        };
        let addresses = Addresses::of(&listen, &own).unwrap();
        // The wildcard is the interface's two addresses, port 5353.
        assert_eq!(addresses.v4_count, 3);
        assert_eq!(addresses.v4[0].to_ne_bytes(), [198, 51, 100, 1]);
        assert_eq!(addresses.v4_ports[0].to_ne_bytes(), [0, 53]);
        assert_eq!(addresses.v4[2].to_ne_bytes(), [198, 51, 100, 3]);
        assert_eq!(addresses.v4_ports[2].to_ne_bytes(), [0x14, 0xe9]);
        assert_eq!(addresses.v6_count, 1);
        assert_eq!(addresses.v6[0][0].to_ne_bytes(), [0x20, 0x01, 0x0d, 0xb8]);
        assert_eq!(addresses.v6[0][3].to_ne_bytes(), [0, 0, 0, 1]);
        // An IPv6 wildcard on an interface without IPv6 addresses: none.
        let any6: Vec<SocketAddr> = vec!["[::]:53".parse().unwrap()];
        assert_eq!(Addresses::of(&any6, &own).unwrap().v6_count, 0);
        let many: Vec<SocketAddr> = (1..=9)
            .map(|host| SocketAddr::from(([198, 51, 100, host], 53)))
            .collect();
        assert!(Addresses::of(&many, &own).is_err());
    }
}
