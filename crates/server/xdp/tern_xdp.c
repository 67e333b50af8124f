// SPDX-License-Identifier: MIT OR Apache-2.0
//
// tern's XDP program (issue 12, docs/decisions/0012-af-xdp.md).
//
// Attached to each interface of `xdp.interfaces`, it looks at every frame the
// interface receives and decides, without touching it:
//
//   - a UDP datagram for one of tern's listen addresses and ports, in an
//     unfragmented IPv4 packet without options or an IPv6 packet whose next
//     header is UDP, behind Ethernet and at most one 802.1Q/802.1ad tag:
//     redirected to the AF_XDP socket of the receive queue it arrived on
//     (tern's core for that queue), or passed to the kernel when that queue
//     has no socket;
//   - everything else: passed to the kernel (frames for another Ethernet
//     address, ARP, ICMP, TCP, other ports and addresses, IP fragments, IPv4
//     options, IPv6 extension headers, frames too short to hold the headers),
//     so the host and tern's TCP keep working and a fragmented or optioned
//     query is still answered by tern's UDP sockets.
//
// Passes of packets for tern's addresses that tern's sockets answer instead
// are counted per CPU in `tern_passed` (read by `tern_xdp_passed_total`).
//
// Self-contained on purpose: no kernel or libbpf headers, so that the one
// build dependency is clang with its BPF target. The listen addresses are
// read-only globals set by the loader before the verifier sees the program,
// so the loops below are unrolled over constants.

typedef unsigned char __u8;
typedef unsigned short __u16;
typedef unsigned int __u32;
typedef unsigned long long __u64;

#define SEC(name) __attribute__((section(name), used))
#define __uint(name, val) int (*name)[val]
#define __type(name, val) typeof(val) *name
#define INLINE static inline __attribute__((always_inline))

#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define net16(x) __builtin_bswap16(x)
#else
#define net16(x) (x)
#endif

// struct xdp_md (include/uapi/linux/bpf.h).
struct xdp_md {
    __u32 data;
    __u32 data_end;
    __u32 data_meta;
    __u32 ingress_ifindex;
    __u32 rx_queue_index;
    __u32 egress_ifindex;
};

enum xdp_action { XDP_ABORTED = 0, XDP_DROP, XDP_PASS, XDP_TX, XDP_REDIRECT };

#define BPF_MAP_TYPE_PERCPU_ARRAY 6
#define BPF_MAP_TYPE_XSKMAP 17

#define ETH_P_IP 0x0800
#define ETH_P_IPV6 0x86DD
#define ETH_P_8021Q 0x8100
#define ETH_P_8021AD 0x88A8
#define IPPROTO_UDP 17

// Helper ids (include/uapi/linux/bpf.h, __BPF_FUNC_MAPPER).
static void *(*bpf_map_lookup_elem)(void *map, const void *key) = (void *)1;
static long (*bpf_redirect_map)(void *map, __u64 key, __u64 flags) = (void *)51;

// The most listen addresses per family (kept equal to MAX_XDP_ADDRESSES in
// crates/server/src/xdp/program.rs).
#define MAX_ADDRESSES 8

// One AF_XDP socket per receive queue (MAX_QUEUES in program.rs).
struct {
    __uint(type, BPF_MAP_TYPE_XSKMAP);
    __uint(max_entries, 256);
    __type(key, __u32);
    __type(value, __u32);
} tern_xsks SEC(".maps");

// Frames for tern's addresses passed to the kernel, per CPU: fragments,
// IPv4 options, IPv6 extension headers (PASSED_* in program.rs).
#define PASSED_FRAGMENT 0
#define PASSED_IPV4_OPTIONS 1
#define PASSED_IPV6_EXTENSION 2
#define PASSED_REASONS 3

struct {
    __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
    __uint(max_entries, PASSED_REASONS);
    __type(key, __u32);
    __type(value, __u64);
} tern_passed SEC(".maps");

// The interface's Ethernet address: frames to any other (another host's, seen
// on a shared or promiscuous link; broadcast; multicast) are the kernel's.
volatile const __u8 tern_mac[6] = {0};

// The listen addresses and ports, as the packet holds them (network order).
// A wildcard listen address arrives here as the interface's own addresses
// (the loader expands it), so a packet routed through this host to another
// address is never taken.
volatile const __u32 tern_v4_count = 0;
volatile const __u32 tern_v4_addresses[MAX_ADDRESSES] = {0};
volatile const __u16 tern_v4_ports[MAX_ADDRESSES] = {0};
volatile const __u32 tern_v6_count = 0;
volatile const __u32 tern_v6_addresses[MAX_ADDRESSES][4] = {{0}};
volatile const __u16 tern_v6_ports[MAX_ADDRESSES] = {0};

struct ethernet {
    __u8 destination[6];
    __u8 source[6];
    __u16 protocol;
} __attribute__((packed));

struct vlan {
    __u16 tci;
    __u16 protocol;
} __attribute__((packed));

struct ipv4 {
    __u8 version_ihl;
    __u8 tos;
    __u16 total_length;
    __u16 id;
    __u16 fragment;
    __u8 ttl;
    __u8 protocol;
    __u16 checksum;
    __u32 source;
    __u32 destination;
} __attribute__((packed));

struct ipv6 {
    __u32 version_class_flow;
    __u16 payload_length;
    __u8 next_header;
    __u8 hop_limit;
    __u32 source[4];
    __u32 destination[4];
} __attribute__((packed));

struct udp {
    __u16 source;
    __u16 destination;
    __u16 length;
    __u16 checksum;
} __attribute__((packed));

INLINE int count_pass(__u32 reason) {
    __u64 *count = bpf_map_lookup_elem(&tern_passed, &reason);
    if (count)
        *count += 1;
    return XDP_PASS;
}

// Whether `address` and `port` are a listen address of ours; with
// `any_port`, whether `address` is, whatever the port.
INLINE int v4_ours(__u32 address, __u16 port, int any_port) {
#pragma unroll
    for (int i = 0; i < MAX_ADDRESSES; i++) {
        if (i >= tern_v4_count)
            break;
        if ((any_port || tern_v4_ports[i] == port) && tern_v4_addresses[i] == address)
            return 1;
    }
    return 0;
}

INLINE int v6_ours(const __u32 *address, __u16 port, int any_port) {
#pragma unroll
    for (int i = 0; i < MAX_ADDRESSES; i++) {
        if (i >= tern_v6_count)
            break;
        if (!any_port && tern_v6_ports[i] != port)
            continue;
        if (tern_v6_addresses[i][0] == address[0] && tern_v6_addresses[i][1] == address[1] &&
            tern_v6_addresses[i][2] == address[2] && tern_v6_addresses[i][3] == address[3])
            return 1;
    }
    return 0;
}

// Whether the frame was sent to this interface's own Ethernet address.
INLINE int to_us(const struct ethernet *ethernet) {
#pragma unroll
    for (int i = 0; i < 6; i++) {
        if (ethernet->destination[i] != tern_mac[i])
            return 0;
    }
    return 1;
}

// IPv6 next-header values that are extension headers (RFC 8200 section 4,
// RFC 7045): hop-by-hop, routing, fragment, ESP, AH, destination options,
// mobility, HIP, shim6.
INLINE int v6_extension(__u8 next) {
    return next == 0 || next == 43 || next == 44 || next == 50 || next == 51 ||
           next == 60 || next == 135 || next == 139 || next == 140;
}

SEC("xdp")
int tern_xdp(struct xdp_md *context) {
    void *data = (void *)(long)context->data;
    void *end = (void *)(long)context->data_end;
    struct ethernet *ethernet = data;
    if ((void *)(ethernet + 1) > end)
        return XDP_PASS;
    if (!to_us(ethernet))
        return XDP_PASS;
    __u16 protocol = ethernet->protocol;
    void *network = ethernet + 1;
    if (protocol == net16(ETH_P_8021Q) || protocol == net16(ETH_P_8021AD)) {
        struct vlan *vlan = network;
        if ((void *)(vlan + 1) > end)
            return XDP_PASS;
        protocol = vlan->protocol;
        network = vlan + 1;
    }
    struct udp *udp;
    if (protocol == net16(ETH_P_IP)) {
        struct ipv4 *ip = network;
        if ((void *)(ip + 1) > end)
            return XDP_PASS;
        if (ip->protocol != IPPROTO_UDP)
            return XDP_PASS;
        if ((ip->fragment & net16(0x3FFF)) != 0) {
            if (v4_ours(ip->destination, 0, 1))
                return count_pass(PASSED_FRAGMENT);
            return XDP_PASS;
        }
        if (ip->version_ihl != 0x45) {
            if (v4_ours(ip->destination, 0, 1))
                return count_pass(PASSED_IPV4_OPTIONS);
            return XDP_PASS;
        }
        udp = (struct udp *)(ip + 1);
        if ((void *)(udp + 1) > end)
            return XDP_PASS;
        if (!v4_ours(ip->destination, udp->destination, 0))
            return XDP_PASS;
    } else if (protocol == net16(ETH_P_IPV6)) {
        struct ipv6 *ip = network;
        if ((void *)(ip + 1) > end)
            return XDP_PASS;
        if (ip->next_header != IPPROTO_UDP) {
            if (v6_extension(ip->next_header) && v6_ours(ip->destination, 0, 1))
                return count_pass(PASSED_IPV6_EXTENSION);
            return XDP_PASS;
        }
        udp = (struct udp *)(ip + 1);
        if ((void *)(udp + 1) > end)
            return XDP_PASS;
        if (!v6_ours(ip->destination, udp->destination, 0))
            return XDP_PASS;
    } else {
        return XDP_PASS;
    }
    // No socket on this queue: the kernel's path (tern's UDP sockets).
    return bpf_redirect_map(&tern_xsks, context->rx_queue_index, XDP_PASS);
}

char _license[] SEC("license") = "Dual MIT/GPL";
