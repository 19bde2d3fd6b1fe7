"""The registry: serializer families by name, and the dispatch family's per-type functions.

Dispatch entries are found by exact type when serializing and by registered name when
deserializing; a registration can wait until the module that defines its type is in use
(numpy is registered that way, so fastser never imports it on its own).
"""

import os
import threading
from collections.abc import Callable, Mapping
from typing import Any, Final, Optional

from fastser.arguments import check_str
from fastser.errors import DeserializationError
from fastser.frame_types import Frame, Header

# A family's dumps takes the object and the caller's context (or None) and returns
# (header, frames), or raises NotImplementedError to hand the object to the next family.
FamilyDumps = Callable[[Any, Optional[Mapping[str, Any]]], tuple[Header, list[Frame]]]
FamilyLoads = Callable[[Header, list[Frame]], Any]
# A dispatch entry's functions: obj -> (header, frames) and (header, frames) -> obj.
TypeDumps = Callable[[Any], tuple[Header, list[Frame]]]
TypeLoads = Callable[[Header, list[Frame]], Any]
# A dispatch entry's way to build its object from a short record's fields, without a header
# (the numpy entry's, families.numpy.short_array: dtype, shape, order "F" or "C",
# writeable, the frame).
ShortLoads = Callable[[str, list[Any], str, bool, Frame], Any]


class Family:
    def __init__(self, name: str, dumps: FamilyDumps, loads: FamilyLoads,
                 accepts: Optional[Callable[[Any], bool]] = None) -> None:
        self.name = name
        self.dumps = dumps
        self.loads = loads
        # A cheap test that lets serialize skip a family without the cost of raising and
        # catching NotImplementedError (slow, above all in compiled code).
        self.accepts = accepts


class DispatchEntry:
    def __init__(self, name: str, dumps: TypeDumps, loads: TypeLoads) -> None:
        self.name = name
        self.dumps = dumps
        self.loads = loads
        # Set on fastser's own numpy entry only: loads of a short array record
        # (codec.array_records) from its fields, (dtype, shape, flags, frame), without a
        # header dict.
        self.short_loads: Optional[ShortLoads] = None


# How often a thread waiting for another's run checks that the run has not ended unseen.
WAIT_CHECK_SECONDS: Final = 1.0


class Registry:
    def __init__(self) -> None:
        self.families: dict[str, Family] = {}
        # Bumped by every family registered: lets a dumps call re-check, per payload and
        # cheaply, what it asked about the families (a lazy registration may run mid-call).
        self.families_version = 0
        self.by_type: dict[type, DispatchEntry] = {}
        self.by_name: dict[str, DispatchEntry] = {}
        # top-level module name -> functions that register its types when first needed
        self.lazy: dict[str, list[Callable[[], None]]] = {}
        # Every top-level module ever given one, run or not: a lookup of its names looks
        # again after _run_lazy, which may have waited for another thread to run them.
        self.lazy_modules: set[str] = set()
        # top-level module -> the thread running its registrations, set when they are done,
        # and those not yet done (the one running first).
        self.running: dict[str, tuple[int, threading.Event, list[Callable[[], None]]]] = {}
        # thread -> the top-level module whose run it waits for
        self.waiting: dict[int, str] = {}
        # Guards lazy and running only, never held while a registration runs: that may
        # import, and an import in another thread may register (a lock held across both
        # would deadlock with the import lock).
        self.lazy_lock = threading.Lock()
        # Bumped by every registration: a miss recorded while one was made is dropped.
        self.generation = 0
        # Types known to have no entry (no lazy registration pending for their module):
        # the pickle fallback asks about every task's type, so misses are remembered.
        # Any registration empties it.
        self.misses: set[type] = set()

    def for_type(self, cls: type) -> Optional[DispatchEntry]:
        if cls in self.misses:  # first: asked for every task, whose type is a miss
            return None
        generation = self.generation
        entry = self.by_type.get(cls)
        if entry is None:
            if self.lazy_modules and self._run_lazy(cls.__module__.partition(".")[0]):
                entry = self.by_type.get(cls)
            if entry is None:
                self.misses.add(cls)
                # A registration since the lookup (another thread's), of this type or one
                # pending for its module: the miss may be wrong, so it is not kept.
                if self.generation != generation:
                    self.misses.discard(cls)
                    entry = self.by_type.get(cls)
        return entry

    def for_name(self, name: str) -> DispatchEntry:
        entry = self.by_name.get(name)
        if entry is None and self._run_lazy(name.partition(".")[0]):
            entry = self.by_name.get(name)
        if entry is None:
            raise DeserializationError(
                f"no dispatch deserializer is registered under the name {name!r}")
        return entry

    def family(self, name: str) -> Family:
        family = self.families.get(name)
        if family is None:
            raise ValueError(f"unknown serializer family {name!r}; "
                             f"registered: {sorted(self.families)}")
        return family

    def _run_lazy(self, toplevel: str) -> bool:
        """Run the registrations waiting for `toplevel`; whether it ever had any (the caller
        then looks again). Another thread running them (numpy's import takes a while) is
        waited for, unless that thread waits, through others, for a run of this one (the
        caller then looks again without them, as from inside its own run). If one raises,
        it is dropped (kept if interrupted) and the rest wait for the next lookup."""
        if toplevel not in self.lazy_modules:
            return False
        me = threading.get_ident()
        while True:
            done = threading.Event()
            claimed: Optional[list[Callable[[], None]]] = None
            waits = False
            outer: Optional[str] = None
            try:
                with self.lazy_lock:
                    running = self.running.get(toplevel)
                    registers = None if running is not None else self.lazy.get(toplevel)
                    if registers is not None:
                        # Claimed first, then into running, then out of lazy: an interrupt
                        # (the pure build checks for signals between any two of these) or a
                        # fork in between finds the list in lazy still, never in neither.
                        claimed = registers
                        self.running[toplevel] = (me, done, registers)
                        del self.lazy[toplevel]
                    elif running is None or running[0] == me or \
                            self.waits_for(running[0], me):
                        return True
                    else:
                        # A lookup from a signal handler may nest in this thread's wait: the
                        # outer one's entry is put back after.
                        outer = self.waiting.get(me)
                        waits = True
                        self.waiting[me] = toplevel
                        done = running[1]
                if claimed is not None:
                    self.run_registers(claimed)
                else:
                    self.wait_for_run(toplevel, done)
            finally:
                if claimed is not None:
                    self.end_run(toplevel, claimed, done)
                elif waits:
                    with self.lazy_lock:
                        if outer is None:
                            self.waiting.pop(me, None)
                        else:
                            self.waiting[me] = outer
            # Then more may have come meanwhile, or the other thread's run may have left
            # some (one raised): looked at again.

    def wait_for_run(self, toplevel: str, done: threading.Event) -> None:
        """Until another thread's run of `toplevel` ends. Looked at again now and then: an
        interrupt inside Event.set() (Python code) may leave the run ended, unset."""
        while not done.wait(WAIT_CHECK_SECONDS):
            with self.lazy_lock:
                running = self.running.get(toplevel)
            if running is None or running[1] is not done:
                return

    def waits_for(self, thread: int, me: int) -> bool:
        """Whether `thread` waits, through the runs of other threads, for a run of `me`'s:
        waiting for it would close a cycle (each thread in it waiting for the next)."""
        for _ in range(len(self.running)):
            module = self.waiting.get(thread)
            owner = None if module is None else self.running.get(module)
            if owner is None:
                return False
            thread = owner[0]
            if thread == me:
                return True
        return False

    @staticmethod
    def run_registers(registers: list[Callable[[], None]]) -> None:
        """Run each registration, removing it once it ran. One that raises an Exception is
        dropped (it would raise again); one interrupted (KeyboardInterrupt, SystemExit) is
        kept, to run again at the next lookup: a Ctrl-C during numpy's first import must not
        leave the process without numpy arrays."""
        register: Optional[Callable[[], None]] = None
        try:
            while registers:
                register = registers[0]
                register()
                if registers and registers[0] is register:
                    del registers[0]  # done: a fork from here on does not run it again
        except Exception:
            if registers and registers[0] is register:
                del registers[0]  # it raised: dropped
            raise

    def end_run(self, toplevel: str, registers: list[Callable[[], None]],
                done: threading.Event) -> None:
        """After a run, done or not: what is left of `registers` waits again for the next
        lookup, and threads waiting for the run go on. (A second interrupt landing in here
        may still leave them unrun in this process: pure Python cannot defer a signal.)"""
        with self.lazy_lock:
            owner = self.running.get(toplevel)
            # This run's entry (its Event is its own): an interrupt may have come before it
            # was made, and another thread may since have claimed the same list from lazy.
            if owner is not None and owner[1] is done:
                if self.lazy.get(toplevel) is not registers and registers:
                    # One raised or was interrupted: the rest, the same list, run next.
                    # Back into lazy before out of running, as the claim went the other
                    # way: an interrupt or a fork between the two finds it in both.
                    registers.extend(self.lazy.get(toplevel, []))
                    self.lazy[toplevel] = registers
                del self.running[toplevel]
        done.set()

    def forget_running(self) -> None:
        """In a child process just forked: registrations that another thread of the parent
        was running are waiting again (that thread is not in the child, the one it was
        running included), and the lock is new (it may have been held). The thread that
        forked, in the child too, keeps its own run."""
        me = threading.get_ident()
        self.lazy_lock = threading.Lock()
        for toplevel, (owner, _, registers) in list(self.running.items()):
            if owner == me:
                continue
            del self.running[toplevel]
            if self.lazy.get(toplevel) is not registers:  # forked as it moved between them
                self.lazy[toplevel] = registers + self.lazy.get(toplevel, [])
        self.waiting = {thread: module for thread, module in self.waiting.items()
                        if thread == me}


REGISTRY: Final = Registry()
if hasattr(os, "register_at_fork"):  # POSIX
    os.register_at_fork(after_in_child=REGISTRY.forget_running)


def register_serialization(cls: type, serialize_fn: TypeDumps, deserialize_fn: TypeLoads,
                           *, name: Optional[str] = None) -> None:
    if name is None:
        name = f"{cls.__module__}.{cls.__qualname__}"
    check_str(name, "name")
    entry = DispatchEntry(name, serialize_fn, deserialize_fn)
    REGISTRY.by_type[cls] = entry
    REGISTRY.by_name[name] = entry
    REGISTRY.generation += 1  # before the misses go: see for_type
    REGISTRY.misses.clear()


def register_serialization_lazy(toplevel_module: str, register: Callable[[], None]) -> None:
    check_str(toplevel_module, "toplevel_module")
    with REGISTRY.lazy_lock:
        REGISTRY.lazy.setdefault(toplevel_module, []).append(register)
        REGISTRY.lazy_modules.add(toplevel_module)
    REGISTRY.generation += 1
    REGISTRY.misses.clear()


def register_serialization_family(name: str, dumps: FamilyDumps, loads: FamilyLoads,
                                  accepts: Optional[Callable[[Any], bool]] = None) -> None:
    check_str(name, "name")
    REGISTRY.families[name] = Family(name, dumps, loads, accepts)
    REGISTRY.families_version += 1


def single_frame(frames: list[Frame], what: str) -> Frame:
    if len(frames) != 1:
        raise DeserializationError(f"a {what} payload has one frame, got {len(frames)}")
    return frames[0]

