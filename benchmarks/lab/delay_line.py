"""A host's one-way delay and loss where the kernel has no netem: every packet its `eth0`
sends is held in the kernel's netfilter queue (an iptables NFQUEUE rule the lab adds in the
host's namespace) until this process, in that namespace, lets it go `--delay-ms` later, or
drops it with probability `--loss-percent`. Packets leave in the order they came.

    python delay_line.py --queue 0 --delay-ms 20 --loss-percent 0.01 [--seconds 14400]

Only the packet's id crosses to this process (copy mode "meta"), and segmentation-offloaded
packets stay whole (NFQA_CFG_F_GSO), so a Python loop keeps up with a 1 Gbit link (a few
thousand packets a second). Verdicts go in batches: "accept every id up to N" releases a
run at once, and also any packet whose notice the socket dropped under load (ENOBUFS).
The rule has --queue-bypass: before this process binds, or after it exits, packets pass
undelayed rather than stall. It prints "ready" once bound, and exits after --seconds, when
its parent goes, or on SIGTERM.
"""

import argparse
import collections
import errno
import os
import random
import select
import signal
import socket
import struct
import sys
import time
from typing import Any, Final

NETLINK_NETFILTER: Final = 12
SUBSYS_QUEUE: Final = 3 << 8
MSG_PACKET, MSG_VERDICT, MSG_CONFIG, MSG_VERDICT_BATCH = (SUBSYS_QUEUE | n for n in range(4))
NLM_F_REQUEST: Final = 1
NLM_F_ACK: Final = 4
NLMSG_ERROR: Final = 2
CFG_CMD, CFG_PARAMS, CFG_QUEUE_MAXLEN, CFG_MASK, CFG_FLAGS = 1, 2, 3, 4, 5
CMD_BIND: Final = 1
COPY_META: Final = 1
CFG_F_GSO: Final = 4
PACKET_HDR: Final = 1
VERDICT_HDR: Final = 2
NF_DROP, NF_ACCEPT = 0, 1
# Packets the kernel holds for us: a 1 Gbit link delayed 20 ms has ~2.5 MB in flight, a few
# hundred offloaded packets or ~1,700 of 1,500 bytes (netem's own default limit is 1,000).
QUEUE_LENGTH: Final = 20_000
RECEIVE_BUFFER: Final = 16 << 20


def attribute(kind: int, data: bytes) -> bytes:
    head = struct.pack("=HH", 4 + len(data), kind)
    return head + data + b"\0" * (-len(data) % 4)


def message(kind: int, queue: int, attributes: bytes, flags: int = NLM_F_REQUEST,
            sequence: int = 0) -> bytes:
    body = struct.pack("=BB", socket.AF_UNSPEC, 0) + struct.pack("!H", queue) + attributes
    return struct.pack("=IHHII", 16 + len(body), kind, flags, sequence, 0) + body


def configure(sock: socket.socket, queue: int, sequence: int, attributes: bytes) -> None:
    """Send a config message and wait for its acknowledgement."""
    sock.send(message(MSG_CONFIG, queue, attributes, NLM_F_REQUEST | NLM_F_ACK, sequence))
    while True:
        data = sock.recv(65536)
        length, kind, _, seq, _ = struct.unpack_from("=IHHII", data)
        if kind == NLMSG_ERROR and seq == sequence:
            (code,) = struct.unpack_from("=i", data, 16)
            if code:
                raise OSError(-code, f"netfilter queue {queue}: {os.strerror(-code)}")
            return


def bind(queue: int) -> socket.socket:
    sock = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, NETLINK_NETFILTER)
    sock.setsockopt(socket.SOL_SOCKET, 33, RECEIVE_BUFFER)  # SO_RCVBUFFORCE (root)
    sock.bind((0, 0))
    configure(sock, queue, 1, attribute(CFG_CMD, struct.pack("!BxH", CMD_BIND, socket.AF_INET)))
    configure(sock, queue, 2, attribute(CFG_PARAMS, struct.pack("!IB", 0, COPY_META))
              + attribute(CFG_QUEUE_MAXLEN, struct.pack("!I", QUEUE_LENGTH))
              + attribute(CFG_MASK, struct.pack("!I", CFG_F_GSO))
              + attribute(CFG_FLAGS, struct.pack("!I", CFG_F_GSO)))
    sock.setblocking(False)
    return sock


def packet_ids(data: bytes) -> list[int]:
    """The ids of the packets that the netlink messages in `data` announce."""
    ids = []
    offset = 0
    while offset + 16 <= len(data):
        length, kind, _, _, _ = struct.unpack_from("=IHHII", data, offset)
        if length < 16:
            break
        if kind == MSG_PACKET:
            at = offset + 20  # past nlmsghdr and nfgenmsg
            while at + 4 <= offset + length:
                size, attr_kind = struct.unpack_from("=HH", data, at)
                if size < 4:
                    break
                if attr_kind & 0x7FFF == PACKET_HDR:
                    ids.append(struct.unpack_from("!I", data, at + 4)[0])
                    break
                at += (size + 3) & ~3
        offset += (length + 3) & ~3
    return ids


def verdict(sock: socket.socket, queue: int, packet: int, decision: int, batch: bool) -> None:
    kind = MSG_VERDICT_BATCH if batch else MSG_VERDICT
    sock.send(message(kind, queue, attribute(VERDICT_HDR, struct.pack("!II", decision, packet))))


def serve(queue: int, delay: float, loss: float, seconds: float) -> dict[str, Any]:
    sock = bind(queue)
    parent = os.getppid()
    print("ready", flush=True)
    held: collections.deque[tuple[float, int]] = collections.deque()
    counts = {"delayed": 0, "dropped": 0, "overruns": 0}
    deadline = time.monotonic() + seconds
    chance = random.Random(queue)
    poller = select.poll()
    poller.register(sock, select.POLLIN)
    while not stopping and time.monotonic() < deadline and os.getppid() == parent:
        wait = held[0][0] - time.monotonic() if held else 0.5
        poller.poll(max(0.0, wait) * 1000.0)
        while True:
            try:
                data = sock.recv(65536)
            except BlockingIOError:
                break
            except OSError as error:
                if error.errno != errno.ENOBUFS:
                    raise
                counts["overruns"] += 1  # the next batch verdict releases what was missed
                continue
            now = time.monotonic()
            for packet in packet_ids(data):
                if loss and chance.random() * 100.0 < loss:
                    verdict(sock, queue, packet, NF_DROP, batch=False)
                    counts["dropped"] += 1
                else:
                    held.append((now + delay, packet))
        now = time.monotonic()
        last = -1
        while held and held[0][0] <= now:
            last = held.popleft()[1]
            counts["delayed"] += 1
        if last >= 0:
            verdict(sock, queue, last, NF_ACCEPT, batch=True)
    if held:  # let what is held go before the rule's bypass takes over
        verdict(sock, queue, held[-1][1], NF_ACCEPT, batch=True)
    sock.close()
    return counts


stopping = False


def stop(number: int, frame: Any) -> None:
    global stopping
    stopping = True


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queue", type=int, default=0)
    parser.add_argument("--delay-ms", type=float, required=True)
    parser.add_argument("--loss-percent", type=float, default=0.0)
    parser.add_argument("--seconds", type=float, default=4 * 3600.0,
                        help="exit after this long (default: 4 hours)")
    args = parser.parse_args()
    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    counts = serve(args.queue, args.delay_ms / 1000.0, args.loss_percent, args.seconds)
    print(f"done: {counts}", file=sys.stderr, flush=True)


if __name__ == "__main__":
    main()
