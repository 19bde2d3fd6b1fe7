"""A network of hosts on one machine: Linux network namespaces on one bridge, links shaped
with tc, and the processes started in them, all removed again by Lab.close.

Rule: everything the lab makes is named with PREFIX and its owner's PID
(`fsl-<pid>-<role>`), and the lab tracks every process it starts by PID (PIDs are shared
across namespaces): close() and clean_leftovers() remove exactly that, and nothing else.

Strategy: the bridge lives in a namespace of its own (the "switch"), never in the machine's
own namespace, so no new link ever appears there. Each host namespace holds one end of a
veth pair (`eth0`, an address of SUBNET, no other route: no default route, no NAT, no
forwarding), the switch the other end (`p-<role>`, a bridge port). A host's uplink is shaped
on its eth0 (tbf for the rate, netem under it for the delay and loss), its downlink on its
bridge port (tbf, the same rate): each direction of a host's link has the rate, as on a
full-duplex NIC, and the one-way delay between two hosts is the profile's delay. A kernel
without netem gets the delay and loss from a delay line (delay_line.py: an NFQUEUE rule on
what each host receives, and a process in the host that lets packets go late). A host's
link can be blacked out (every packet dropped, both ways) and restored at its bridge port.
"""

import json
import os
import re
import selectors
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass
from types import FrameType
from typing import Any, Final, Optional, TextIO

PREFIX: Final = "fsl-"
# One private /24 that exists only on the lab's bridge; nothing else is assigned from it.
SUBNET: Final = "10.213.77"
BRIDGE: Final = "br0"  # inside the switch namespace
HOST_DEVICE: Final = "eth0"  # inside each host namespace
COMMAND_TIMEOUT: Final = 20.0  # seconds, for one ip/tc command
STOP_TIMEOUT: Final = 8.0  # seconds between SIGTERM and SIGKILL of the lab's processes
# netem's queue in packets: it holds what is in flight on a delayed link (1 Gbit x 20 ms is
# about 1,700 packets of 1,500 bytes); its default of 1,000 would drop at that rate.
NETEM_LIMIT: Final = 100_000
# How a profile's delay and loss are applied: tc's netem, or where the kernel lacks it the
# delay line (iptables' NFQUEUE and delay_line.py).
NETEM: Final = "netem"
DELAY_LINE: Final = "delay line"
DELAY_LINE_SCRIPT: Final = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                        "delay_line.py")
DELAY_LINE_QUEUE: Final = 0
DELAY_LINE_READY: Final = 10.0  # seconds a delay line may take to bind its queue
# tbf's queue, as the time its rate takes to drain it: more than a WAN round trip (40 ms),
# so a TCP window is queued rather than dropped.
TBF_LATENCY_MS: Final = 100


@dataclass(frozen=True)
class Profile:
    """A network: `shared` puts every host in one namespace (loopback); otherwise each
    host's link has `rate_bit` per direction (None: unshaped), `delay_ms` one way and
    `loss_percent` of packets lost one way."""
    name: str
    shared: bool
    rate_bit: Optional[int]
    delay_ms: float
    loss_percent: float

    def without_netem(self) -> "Profile":
        """The profile with its rate alone (where netem is missing)."""
        return Profile(self.name, self.shared, self.rate_bit, 0.0, 0.0)

    def needs_netem(self) -> bool:
        return bool(self.delay_ms or self.loss_percent)

    def describe(self) -> str:
        if self.shared:
            return "one namespace, 127.0.0.1"
        if self.rate_bit is None and not self.delay_ms and not self.loss_percent:
            return "veth on a bridge, unshaped"
        parts = []
        if self.rate_bit is not None:
            parts.append(f"{self.rate_bit / 1e6:g} Mbit/s each way")
        if self.delay_ms:
            parts.append(f"{self.delay_ms:g} ms one way")
        if self.loss_percent:
            parts.append(f"{self.loss_percent:g} % loss")
        return ", ".join(parts)


PROFILES: Final = {
    "loopback": Profile("loopback", True, None, 0.0, 0.0),
    "veth": Profile("veth", False, None, 0.0, 0.0),
    "1gbit": Profile("1gbit", False, 10**9, 0.2, 0.0),
    "100mbit": Profile("100mbit", False, 10**8, 1.0, 0.0),
    "wan": Profile("wan", False, 10**9, 20.0, 0.01),
}


class LabError(Exception):
    """The lab cannot be built or run here (the message says why)."""


class Interrupted(Exception):
    """The run got SIGINT, SIGTERM or SIGHUP (raise_on_signals)."""


def raise_on_signals() -> None:
    """Turn SIGINT, SIGTERM and SIGHUP into Interrupted, so that the `finally` that closes
    a Lab runs on each of them."""
    for number in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
        signal.signal(number, on_signal)


def on_signal(number: int, frame: Optional[FrameType]) -> None:
    raise Interrupted(signal.Signals(number).name)


def choose(text: str, known: tuple[str, ...], what: str,
           aliases: Optional[Mapping[str, tuple[str, ...]]] = None) -> list[str]:
    """The names of a comma-separated option, each once, in order (an alias stands for
    its names); SystemExit, saying what is known, for any other."""
    chosen: list[str] = []
    for name in text.split(","):
        for one in (aliases or {}).get(name, (name,)):
            if one not in known:
                raise SystemExit(f"unknown {what} {one!r}; known: {', '.join(known)}")
            if one not in chosen:
                chosen.append(one)
    return chosen


class LogDir:
    """Where a run's processes log: DIR if the user named one (kept), else a fresh
    directory that finish() removes unless the run failed (then it says where it is)."""

    def __init__(self, requested: Optional[str]) -> None:
        self.kept = requested is not None
        self.path = requested or tempfile.mkdtemp(prefix="fsl-logs-")
        os.makedirs(self.path, exist_ok=True)

    def finish(self, failed: bool) -> None:
        if failed:
            print(f"lab: the processes' logs are in {self.path}", file=sys.stderr)
        elif not self.kept:
            for name in os.listdir(self.path):
                os.unlink(os.path.join(self.path, name))
            os.rmdir(self.path)


class Replies:
    """What a process of the lab answers on its stdout: a JSON object a line, after
    `prefix` (other lines are passed over), read with every wait bounded. An answer with
    "error" (the process failed) raises LabError, and so does the process's end."""

    def __init__(self, process: "subprocess.Popen[bytes]", prefix: str, log: str,
                 name: str) -> None:
        stdout = process.stdout
        if stdout is None:
            raise LabError(f"{name} has no stdout")
        self.stdout = stdout
        self.prefix = prefix
        self.log = log
        self.name = name
        os.set_blocking(stdout.fileno(), False)
        self.selector = selectors.DefaultSelector()
        self.selector.register(stdout, selectors.EVENT_READ)
        self.buffer = b""
        self.ended = False

    def next(self, timeout: float) -> Optional[dict[str, Any]]:
        """The next answer, or None if there is none within `timeout` seconds."""
        deadline = time.monotonic() + timeout
        while True:
            while b"\n" in self.buffer:
                line, self.buffer = self.buffer.split(b"\n", 1)
                text = line.decode(errors="replace")
                if text.startswith(self.prefix):
                    message: dict[str, Any] = json.loads(text[len(self.prefix):])
                    if "error" in message:
                        raise LabError(f"{self.name} failed (its log: {self.log}):\n"
                                       f"{message['error']}")
                    return message
            if self.ended:
                raise LabError(f"{self.name} exited (its log: {self.log}):\n"
                               f"{tail(self.log)}")
            left = deadline - time.monotonic()
            # Looked at even when the time is up: what the process has written is read.
            if self.selector.select(max(0.0, min(left, 1.0))):
                data = self.stdout.read(65536)
                self.ended = not data
                self.buffer += data or b""
            elif left <= 0:
                return None


def tail(path: str, lines: int = 30) -> str:
    """The last `lines` lines of a log ("" if there is none)."""
    try:
        with open(path, errors="replace") as file:
            return "".join(file.readlines()[-lines:])
    except OSError:
        return ""


def run(argv: list[str], check: bool = True) -> subprocess.CompletedProcess[str]:
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=COMMAND_TIMEOUT)
    except subprocess.TimeoutExpired as exc:
        raise LabError(f"{' '.join(argv)}: no answer in {COMMAND_TIMEOUT:g} s") from exc
    if check and done.returncode != 0:
        raise LabError(f"{' '.join(argv)}: {done.stderr.strip() or done.returncode}")
    return done


def check_can_build() -> None:
    """Raise LabError, saying why, where namespaces, veths, a bridge or tc's qdiscs
    cannot be made: not root, no `ip`/`tc`, or a kernel or container that refuses them."""
    for tool in ("ip", "tc"):
        if shutil.which(tool) is None:
            raise LabError(f"the network lab needs `{tool}` (iproute2), which is not on PATH")
    if os.geteuid() != 0:
        raise LabError("the network lab creates network namespaces, which needs root "
                       "(run it as root, e.g. with sudo)")
    probe = f"{PREFIX}{os.getpid()}-probe"
    try:
        done = run(["ip", "netns", "add", probe], check=False)
        if done.returncode != 0:
            raise LabError("cannot create a network namespace here "
                           f"(`ip netns add` said: {done.stderr.strip()})")
        for argv in (["ip", "-n", probe, "link", "add", "v0", "type", "veth", "peer",
                      "name", "v1"],
                     ["ip", "-n", probe, "link", "add", BRIDGE, "type", "bridge"],
                     ["tc", "-n", probe, "qdisc", "add", "dev", "v0", "root", "handle", "1:",
                      "tbf", "rate", "1gbit", "burst", "128kb", "latency", "10ms"]):
            done = run(argv, check=False)
            if done.returncode != 0:
                raise LabError(f"cannot build the lab here: `{' '.join(argv)}` said: "
                               f"{done.stderr.strip()}")
    finally:
        run(["ip", "netns", "del", probe], check=False)


def has_netem() -> bool:
    """Whether tc's netem (delay and loss) exists here: a kernel built without
    CONFIG_NET_SCH_NETEM has tbf (the rate) but no way to delay or drop packets."""
    probe = f"{PREFIX}{os.getpid()}-netem"
    try:
        run(["ip", "netns", "add", probe])
        run(["ip", "-n", probe, "link", "add", "v0", "type", "veth", "peer", "name", "v1"])
        return run(["tc", "-n", probe, "qdisc", "add", "dev", "v0", "root", "netem", "delay",
                    "1ms", "loss", "0.01%"], check=False).returncode == 0
    finally:
        run(["ip", "netns", "del", probe], check=False)


def has_delay_line() -> bool:
    """Whether the delay line can work here: iptables with the NFQUEUE target (the kernel's
    CONFIG_NETFILTER_XT_TARGET_NFQUEUE), tried in a namespace of its own."""
    if shutil.which("iptables") is None:
        return False
    probe = f"{PREFIX}{os.getpid()}-nfq"
    try:
        run(["ip", "netns", "add", probe])
        return run(["ip", "netns", "exec", probe, "iptables", "-A", "INPUT", "-j", "NFQUEUE",
                    "--queue-num", "0", "--queue-bypass"], check=False).returncode == 0
    finally:
        run(["ip", "netns", "del", probe], check=False)


def delay_method() -> Optional[str]:
    """How this machine can delay and drop packets: NETEM, DELAY_LINE, or None."""
    if has_netem():
        return NETEM
    if has_delay_line():
        return DELAY_LINE
    return None


def lab_namespaces() -> list[str]:
    """The names of every namespace with the lab's prefix, this run's or another's."""
    done = run(["ip", "netns", "list"], check=False)
    return [line.split()[0] for line in done.stdout.splitlines()
            if line.startswith(PREFIX)]


def namespace_pids(namespace: str) -> list[int]:
    done = run(["ip", "netns", "pids", namespace], check=False)
    return [int(word) for word in done.stdout.split() if word.isdigit()]


def kill_pids(pids: list[int]) -> None:
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def owner_alive(namespace: str) -> bool:
    """Whether the lab run that made `namespace` (its PID is in the name) is still
    running."""
    match = re.match(rf"{re.escape(PREFIX)}(\d+)-", namespace)
    if match is None:
        return False
    pid = int(match.group(1))
    if pid == os.getpid():
        return False
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as file:
            return b"lab" in file.read()
    except OSError:
        return False


def clean_leftovers(force: bool = False) -> list[str]:
    """Remove the namespaces (with their links and processes) that lab runs left behind:
    those whose run has ended, or all of the prefix's with `force`. Returns their names."""
    removed = []
    for namespace in lab_namespaces():
        if not force and owner_alive(namespace):
            continue
        kill_pids(namespace_pids(namespace))
        run(["ip", "netns", "del", namespace], check=False)
        removed.append(namespace)
    return removed


def burst_bytes(rate_bit: int) -> int:
    """tbf's bucket: at least 4 ms of the rate (timer granularity) and two 64 KiB segments
    (veth hands tbf segmentation-offloaded packets of up to 64 KiB)."""
    return max(2 * 65536, rate_bit // 8 // 250)


@dataclass
class Host:
    role: str
    namespace: str
    address: str


class Lab:
    """The namespaces, links and processes of one network; close() removes them all."""

    def __init__(self, profile: Profile, log_dir: str, delay_by: Optional[str] = NETEM) -> None:
        if profile.needs_netem() and delay_by not in (NETEM, DELAY_LINE):
            raise LabError(f"profile {profile.name} has a delay or loss, and nothing here "
                           "applies them (neither netem nor the delay line)")
        self.profile = profile
        self.delay_by = delay_by
        self.tag = f"{PREFIX}{os.getpid()}"
        self.log_dir = log_dir
        self.namespaces: list[str] = []
        self.processes: list[subprocess.Popen[bytes]] = []
        self.logs: list[TextIO] = []
        self.log_paths: list[str] = []
        self.hosts: dict[str, Host] = {}
        self.switch: Optional[str] = None
        self.closed = False

    def build(self, roles: list[str]) -> None:
        """The namespaces and links of `roles`' hosts (close() removes what a failure here
        left half made)."""
        profile = self.profile
        if profile.shared:
            namespace = self.add_namespace("lo")
            for role in roles:
                self.hosts[role] = Host(role, namespace, "127.0.0.1")
        else:
            self.switch = self.add_namespace("switch")
            run(["ip", "-n", self.switch, "link", "add", BRIDGE, "type", "bridge"])
            run(["ip", "-n", self.switch, "link", "set", BRIDGE, "up"])
            for number, role in enumerate(roles, start=1):
                self.add_host(role, f"{SUBNET}.{number}")
            if profile.needs_netem() and self.delay_by == DELAY_LINE:
                for role in roles:
                    self.start_delay_line(role)

    def start_delay_line(self, role: str) -> None:
        """Delay (and drop) what `role`'s host receives on its link, by the profile: on the
        receiving side, where the packets belong to no socket yet (held on the sending side,
        they would count against TCP's small-queue limit, which netem sidesteps and the
        delay line cannot: 20 ms held there let 0.3 MB/s through). Waits until the line has
        bound its queue; the rule lets packets pass undelayed while no line is bound."""
        profile = self.profile
        namespace = self.hosts[role].namespace
        run(["ip", "netns", "exec", namespace, "iptables", "-A", "INPUT", "-i", HOST_DEVICE,
             "-j", "NFQUEUE", "--queue-num", str(DELAY_LINE_QUEUE), "--queue-bypass"])
        line = self.spawn(role, [sys.executable, "-u", DELAY_LINE_SCRIPT,
                                 "--queue", str(DELAY_LINE_QUEUE),
                                 "--delay-ms", f"{profile.delay_ms:g}",
                                 "--loss-percent", f"{profile.loss_percent:g}"],
                          dict(os.environ), f"delay-line-{role}.log", pipes=True)
        assert line.stdout is not None
        with selectors.DefaultSelector() as selector:
            selector.register(line.stdout, selectors.EVENT_READ)
            if not selector.select(DELAY_LINE_READY) or line.stdout.readline() != b"ready\n":
                raise LabError(f"{role}'s delay line did not start: see its log, "
                               f"delay-line-{role}.log")

    def add_namespace(self, role: str) -> str:
        namespace = f"{self.tag}-{role}"
        self.namespaces.append(namespace)  # first: close() removes it even half made
        run(["ip", "netns", "add", namespace])
        run(["ip", "-n", namespace, "link", "set", "lo", "up"])
        return namespace

    def add_host(self, role: str, address: str) -> None:
        namespace = self.add_namespace(role)
        switch = self.switch
        if switch is None:
            raise LabError("a host needs the switch")
        port = f"p-{role}"[:15]
        # Made inside the switch, the pair never appears in the machine's own namespace.
        run(["ip", "-n", switch, "link", "add", port, "type", "veth", "peer", "name",
             HOST_DEVICE, "netns", namespace])
        run(["ip", "-n", switch, "link", "set", port, "master", BRIDGE])
        run(["ip", "-n", switch, "link", "set", port, "up"])
        run(["ip", "-n", namespace, "addr", "add", f"{address}/24", "dev", HOST_DEVICE])
        run(["ip", "-n", namespace, "link", "set", HOST_DEVICE, "up"])
        routes = run(["ip", "-n", namespace, "route", "show", "default"]).stdout.strip()
        if routes:
            raise LabError(f"{namespace} has a default route ({routes}); the lab adds none")
        self.shape(namespace, HOST_DEVICE, uplink=True)
        self.shape(switch, port, uplink=False)
        self.hosts[role] = Host(role, namespace, address)

    def shape(self, namespace: str, device: str, uplink: bool) -> None:
        """The profile's rate on `device`'s egress, and on an uplink its delay and loss
        too (netem under tbf: delayed packets leave at the rate)."""
        profile = self.profile
        netem = []
        if self.delay_by != NETEM:
            uplink = False  # the delay line applies them
        if uplink and profile.delay_ms:
            netem += ["delay", f"{profile.delay_ms:g}ms"]
        if uplink and profile.loss_percent:
            netem += ["loss", f"{profile.loss_percent:g}%"]
        tc = ["tc", "-n", namespace, "qdisc", "add", "dev", device]
        if profile.rate_bit is not None:
            run(tc + ["root", "handle", "1:", "tbf", "rate", f"{profile.rate_bit}bit",
                      "burst", str(burst_bytes(profile.rate_bit)),
                      "latency", f"{TBF_LATENCY_MS}ms"])
            if netem:
                run(tc + ["parent", "1:1", "handle", "10:", "netem"] + netem
                    + ["limit", str(NETEM_LIMIT)])
        elif netem:
            run(tc + ["root", "handle", "1:", "netem"] + netem + ["limit", str(NETEM_LIMIT)])

    def spawn(self, role: str, argv: list[str], env: dict[str, str], log_name: str,
              pipes: bool = False) -> "subprocess.Popen[bytes]":
        """Start `argv` in `role`'s namespace, in a process group of its own (the group
        holds a nanny's worker too), stderr (and stdout unless `pipes`) to a log file."""
        if self.closed:
            raise LabError("the lab is closed")
        log = open(os.path.join(self.log_dir, log_name), "w")
        self.logs.append(log)
        process = subprocess.Popen(
            ["ip", "netns", "exec", self.hosts[role].namespace] + argv, env=env,
            stdin=subprocess.PIPE if pipes else subprocess.DEVNULL,
            stdout=subprocess.PIPE if pipes else log, stderr=log, start_new_session=True)
        self.processes.append(process)
        self.log_paths.append(log.name)
        return process

    def check_running(self) -> None:
        """Raise LabError, with the end of its log, if a process the lab started has
        exited (a cluster's process exits only when it failed)."""
        for process, log in zip(self.processes, self.log_paths):
            if process.poll() is not None:
                with open(log, errors="replace") as file:
                    end = "".join(file.readlines()[-15:])
                raise LabError(f"a process of the lab exited ({process.returncode}); "
                               f"the end of its log, {log}:\n{end}")

    def pids(self) -> list[int]:
        """Every live process of the lab's process groups (a nanny's worker included, even
        once its nanny has gone)."""
        groups = {process.pid for process in self.processes}
        found = []
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                with open(f"/proc/{entry}/stat") as file:
                    fields = file.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[2]) in groups:  # fields[2]: the process group
                found.append(int(entry))
        return found

    def black_out(self, role: str) -> None:
        """Drop, silently and in both directions, every packet of `role`'s link, as 100 %
        loss would: its bridge port is set to the "disabled" state, in which the bridge
        takes no frame from the port and forwards none to it. Carrier, addresses, routes and
        neighbour entries stay as they are on both ends, so the host's processes see nothing
        but silence (setting a veth end down would drop the peer's carrier, which the host's
        kernel reacts to). The bridge runs no STP, which would set the state back."""
        self.set_port_state(role, "0")

    def restore(self, role: str) -> None:
        """Undo black_out: the port forwards again."""
        self.set_port_state(role, "3")

    def set_port_state(self, role: str, state: str) -> None:
        if self.switch is None:
            raise LabError("a link can be blacked out only on a profile with a bridge")
        if shutil.which("bridge") is None:
            raise LabError("blacking out a link needs `bridge` (iproute2), which is not on "
                           "PATH")
        port = f"p-{role}"[:15]
        # `bridge link set` (`ip link set ... type bridge_slave state` accepts the state but
        # leaves it as it was here); "disabled" is the one state the bridge keeps without STP.
        run(["bridge", "-n", self.switch, "link", "set", "dev", port, "state", state])
        shown = run(["bridge", "-n", self.switch, "link", "show", "dev", port]).stdout
        wanted = "disabled" if state == "0" else "forwarding"
        if f"state {wanted}" not in shown:
            raise LabError(f"the bridge port {port} did not become {wanted}: {shown.strip()}")

    def link_bytes(self) -> dict[str, int]:
        """Bytes counted so far on each direction of each host's link (`<port> rx`: what
        the host sent; in one namespace, loopback's, counted once)."""
        if self.switch is None:
            namespace, devices = self.namespaces[0], ["lo"]
        else:
            namespace = self.switch
            devices = [f"p-{role}"[:15] for role in self.hosts]
        stats: list[dict[str, Any]] = json.loads(
            run(["ip", "-n", namespace, "-j", "-s", "link", "show"]).stdout)
        counted = {}
        for link in stats:
            if link.get("ifname") in devices:
                counted[f"{link['ifname']} rx"] = int(link["stats64"]["rx"]["bytes"])
                if self.switch is not None:
                    counted[f"{link['ifname']} tx"] = int(link["stats64"]["tx"]["bytes"])
        return counted

    def close(self) -> None:
        """Stop every process the lab started (SIGTERM, SIGKILL after STOP_TIMEOUT), then
        every process left in its namespaces, then remove the namespaces: their links go
        with them. Safe to call twice; a second SIGINT or SIGTERM does not interrupt it."""
        if self.closed:
            return
        self.closed = True
        previous = {number: signal.signal(number, signal.SIG_IGN)
                    for number in (signal.SIGINT, signal.SIGTERM)}
        try:
            for number in (signal.SIGTERM, signal.SIGKILL):
                for process in self.processes:
                    try:
                        os.killpg(process.pid, number)
                    except (ProcessLookupError, PermissionError):
                        pass
                deadline = time.monotonic() + STOP_TIMEOUT
                for process in self.processes:
                    try:
                        process.wait(max(0.0, deadline - time.monotonic()))
                    except subprocess.TimeoutExpired:
                        pass
                if not self.pids():
                    break
            for namespace in self.namespaces:
                kill_pids(namespace_pids(namespace))
            for namespace in reversed(self.namespaces):
                run(["ip", "netns", "del", namespace], check=False)
            for process in self.processes:
                for stream in (process.stdin, process.stdout):
                    if stream is not None:
                        try:
                            stream.close()
                        except BrokenPipeError:
                            pass  # a line written to a process that had exited
            for log in self.logs:
                log.close()
        finally:
            for number, handler in previous.items():
                signal.signal(number, handler)
