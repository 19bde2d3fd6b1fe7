"""Lazy registrations (register_serialization_lazy) across threads and processes: one runs
once, another thread that needs it waits for it, a registration that imports does not
deadlock with a thread importing a module that registers, nor two registrations that ask
for each other's types, a child forked mid-registration runs it again, one that forks
finishes in both processes, one that raises leaves the others waiting, one interrupted
(or a run interrupted as it is claimed) waits too, and a lookup from a signal handler that
waits inside another wait leaves it intact."""

import os
import signal
import sys
import threading
import time
import types
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import fastser
from fastser.families.registry import REGISTRY


def make_class(module: str) -> type:
    return type("Thing", (), {"__module__": module})


def in_thread(target: Any, *args: Any) -> threading.Thread:
    """Started; a daemon, so that a test that finds a deadlock does not hang the run."""
    thread = threading.Thread(target=target, args=args, daemon=True)
    thread.start()
    return thread


def test_a_registration_running_in_one_thread_is_waited_for_by_another() -> None:
    # numpy's registration imports numpy, which takes a while: a second thread receiving an
    # array meanwhile found no registration pending and none made, and failed.
    slow = make_class("fastser_test_slow")
    started, release = threading.Event(), threading.Event()

    def register() -> None:
        started.set()
        assert release.wait(10)
        fastser.register_serialization(slow, lambda obj: ({}, []), lambda h, f: slow(),
                                       name="fastser_test_slow.T")

    fastser.register_serialization_lazy("fastser_test_slow", register)
    record = fastser.Serialized({"serializer": "dispatch", "type": "fastser_test_slow.T"}, [])
    frames = fastser.dumps([record])
    results: list[Any] = []

    def receive() -> None:
        try:
            results.append(fastser.loads(frames)[0])
        except Exception as exc:  # noqa: BLE001 - the assertion below shows it
            results.append(exc)

    first = threading.Thread(target=receive, daemon=True)
    first.start()
    second = threading.Thread(target=receive, daemon=True)
    try:
        assert started.wait(10)
        second.start()
        second.join(0.2)  # the second waits for the registration the first is running
        assert second.is_alive() and not results
    finally:
        release.set()
    first.join(10)
    second.join(10)
    assert [type(result) for result in results] == [slow, slow], results
    # A type of that module asked for once it ran: found, not run again.
    assert type(fastser.serialize(slow(), ["dispatch"])[0]) is dict


def test_a_registration_that_imports_does_not_deadlock_with_an_import_that_registers(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Thread A runs a registration that imports `plugin`; thread B is importing `plugin`,
    # whose body registers lazily. A lock held across the registration deadlocked the two.
    sync = types.ModuleType("fastser_test_sync")
    sync.registering = threading.Event()  # type: ignore[attr-defined]
    sync.importing = threading.Event()  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "fastser_test_sync", sync)
    (tmp_path / "fastser_test_plugin.py").write_text(
        "import fastser, fastser_test_sync as sync\n"
        "sync.importing.set()\n"
        "assert sync.registering.wait(10)\n"
        "fastser.register_serialization_lazy('fastser_test_other', lambda: None)\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    thing = make_class("fastser_test_importer")

    def register() -> None:
        sync.registering.set()
        assert sync.importing.wait(10)
        __import__("fastser_test_plugin")  # waits for B's import to finish
        fastser.register_serialization(thing, lambda obj: ({}, []), lambda h, f: thing())

    fastser.register_serialization_lazy("fastser_test_importer", register)
    serializing = in_thread(fastser.serialize, thing(), ["dispatch"])
    importing = in_thread(__import__, "fastser_test_plugin")
    serializing.join(10)
    importing.join(10)
    assert not serializing.is_alive() and not importing.is_alive(), "deadlocked"
    assert fastser.serialize(thing(), ["dispatch"])[0]["serializer"] == "dispatch"


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_a_child_forked_during_a_registration_runs_it_itself() -> None:
    thing = make_class("fastser_test_forked")
    parent = os.getpid()
    started, release = threading.Event(), threading.Event()

    def register() -> None:
        if os.getpid() == parent:
            started.set()
            assert release.wait(10)
        fastser.register_serialization(thing, lambda obj: ({}, []), lambda h, f: thing())

    fastser.register_serialization_lazy("fastser_test_forked", register)
    registering = in_thread(fastser.serialize, thing(), ["dispatch"])
    try:
        assert started.wait(10)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)  # fork with threads, 3.12+
            child = os.fork()
        if child == 0:  # the child: its parent's registering thread is not here
            signal.alarm(10)  # a hang ends the child, and the assertion below says so
            try:
                header, _ = fastser.serialize(thing(), ["dispatch"])
                os._exit(0 if header["serializer"] == "dispatch" else 1)
            finally:
                os._exit(2)
        _, status = os.waitpid(child, 0)
    finally:
        release.set()
        registering.join(10)
    assert os.waitstatus_to_exitcode(status) == 0


def test_a_registration_that_raises_is_dropped_and_the_next_runs_at_the_next_lookup() -> None:
    thing = make_class("fastser_test_failing")
    calls: list[str] = []

    def broken() -> None:
        calls.append("broken")
        raise ImportError("an optional dependency is broken")

    def working() -> None:
        calls.append("working")
        fastser.register_serialization(thing, lambda obj: ({}, []), lambda h, f: thing())

    fastser.register_serialization_lazy("fastser_test_failing", broken)
    fastser.register_serialization_lazy("fastser_test_failing", working)
    with pytest.raises(ImportError, match="optional dependency"):
        fastser.serialize(thing(), ["dispatch"])
    assert fastser.serialize(thing(), ["dispatch"])[0]["serializer"] == "dispatch"
    assert calls == ["broken", "working"]


def test_an_interrupted_registration_runs_again_at_the_next_lookup() -> None:
    # A Ctrl-C during numpy's first import is no fault of the registration: dropping it
    # would leave the process without the type for good.
    thing = make_class("fastser_test_interrupted")
    calls: list[str] = []

    def slow() -> None:
        calls.append("slow")
        if len(calls) == 1:
            raise KeyboardInterrupt
        fastser.register_serialization(thing, lambda obj: ({}, []), lambda h, f: thing())

    fastser.register_serialization_lazy("fastser_test_interrupted", slow)
    with pytest.raises(KeyboardInterrupt):
        fastser.serialize(thing(), ["dispatch"])
    assert "fastser_test_interrupted" not in REGISTRY.running
    assert fastser.serialize(thing(), ["dispatch"])[0]["serializer"] == "dispatch"
    assert calls == ["slow", "slow"]


@pytest.mark.parametrize("step", range(1, 4))
def test_an_interrupt_while_a_run_is_claimed_leaves_it_waiting(
        step: int, monkeypatch: pytest.MonkeyPatch) -> None:
    # The pure build may take a signal between any two statements of the claim: here
    # raised by REGISTRY.running's store (before or after it) or REGISTRY.lazy's delete.
    thing = make_class(f"fastser_test_claim_{step}")
    module = thing.__module__
    fastser.register_serialization_lazy(
        module, lambda: fastser.register_serialization(thing, lambda obj: ({}, []),
                                                       lambda h, f: thing()))

    class Interrupting(dict):  # type: ignore[type-arg]  # stands in for REGISTRY.running
        def __setitem__(self, key: Any, value: Any) -> None:
            if step == 1:
                raise KeyboardInterrupt
            super().__setitem__(key, value)
            if step == 2:
                raise KeyboardInterrupt

    class InterruptingLazy(dict):  # type: ignore[type-arg]  # stands in for REGISTRY.lazy
        def __delitem__(self, key: Any) -> None:
            super().__delitem__(key)
            if step == 3:
                raise KeyboardInterrupt

    monkeypatch.setattr(REGISTRY, "running", Interrupting(REGISTRY.running))
    monkeypatch.setattr(REGISTRY, "lazy", InterruptingLazy(REGISTRY.lazy))
    with pytest.raises(KeyboardInterrupt):
        fastser.serialize(thing(), ["dispatch"])
    assert module not in REGISTRY.running and module in REGISTRY.lazy
    REGISTRY.running, REGISTRY.lazy = dict(REGISTRY.running), dict(REGISTRY.lazy)
    assert fastser.serialize(thing(), ["dispatch"])[0]["serializer"] == "dispatch"


def test_a_run_that_ends_without_setting_its_event_releases_its_waiters() -> None:
    # Event.set() is Python code: an interrupt inside it leaves the run ended (out of
    # running) but the Event unset. Waiters look again now and then.
    module = "fastser_test_unset_event"
    thing = make_class(module)
    fastser.register_serialization_lazy(
        module, lambda: fastser.register_serialization(thing, lambda obj: ({}, []),
                                                       lambda h, f: thing()))
    with REGISTRY.lazy_lock:  # a run of another thread, as _run_lazy claims one
        registers = REGISTRY.lazy.pop(module)
        REGISTRY.running[module] = (-1, threading.Event(), registers)
    found: list[str] = []
    waiter = in_thread(lambda: found.append(fastser.serialize(thing(), ["dispatch"])[0]
                                            ["serializer"]))
    time.sleep(0.2)
    assert not found  # waiting for the run
    with REGISTRY.lazy_lock:  # the run ends, its Event never set
        REGISTRY.lazy[module] = registers
        del REGISTRY.running[module]
    waiter.join(10)
    assert found == ["dispatch"]


def test_two_registrations_that_look_each_other_up_in_two_threads_do_not_deadlock() -> None:
    # A's registration asks for B's type while B's, in another thread, asks for A's: the
    # second to ask would wait for the first, which waits for it. It looks again instead.
    first, second = make_class("fastser_test_abba_a"), make_class("fastser_test_abba_b")
    in_a, in_b = threading.Event(), threading.Event()

    def register_a() -> None:
        in_a.set()
        assert in_b.wait(10)
        fastser.serialize(second(), ["dispatch", "pickle"])  # waits for B's run
        fastser.register_serialization(first, lambda obj: ({}, []), lambda h, f: first())

    def register_b() -> None:
        in_b.set()
        assert in_a.wait(10)
        for _ in range(1000):  # until A's thread waits for this run
            if REGISTRY.waiting:
                break
            time.sleep(0.01)
        fastser.serialize(first(), ["dispatch", "pickle"])  # would wait for A's: a cycle
        fastser.register_serialization(second, lambda obj: ({}, []), lambda h, f: second())

    fastser.register_serialization_lazy("fastser_test_abba_a", register_a)
    fastser.register_serialization_lazy("fastser_test_abba_b", register_b)
    threads = [in_thread(fastser.serialize, first(), ["dispatch"]),
               in_thread(fastser.serialize, second(), ["dispatch"])]
    for thread in threads:
        thread.join(10)
    assert not any(thread.is_alive() for thread in threads), "deadlocked"
    for kind in (first, second):
        assert fastser.serialize(kind(), ["dispatch"])[0]["serializer"] == "dispatch"


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_a_registration_that_forks_finishes_in_both_processes() -> None:
    thing = make_class("fastser_test_forking")
    parent = os.getpid()
    children: list[int] = []

    def register() -> None:
        fastser.register_serialization(thing, lambda obj: ({}, []), lambda h, f: thing())
        if os.getpid() == parent:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", DeprecationWarning)  # fork with threads
                children.append(os.fork())  # 0 in the child, which goes on from here too

    fastser.register_serialization_lazy("fastser_test_forking", register)
    try:
        ok = fastser.serialize(thing(), ["dispatch"])[0]["serializer"] == "dispatch"
    except BaseException:
        ok = False
    if os.getpid() != parent:
        os._exit(0 if ok else 1)
    _, status = os.waitpid(children[0], 0)
    assert ok and os.waitstatus_to_exitcode(status) == 0


@pytest.mark.skipif(not hasattr(signal, "setitimer"), reason="needs signal.setitimer")
def test_a_lookup_from_a_signal_handler_during_a_wait_leaves_the_wait_intact() -> None:
    # The main thread waits for one module's run; a signal handler then waits for another.
    outer, inner = make_class("fastser_test_outer"), make_class("fastser_test_inner")
    release = threading.Event()

    def slow(kind: type) -> Callable[[], None]:
        def register() -> None:
            assert release.wait(10)
            fastser.register_serialization(kind, lambda obj: ({}, []), lambda h, f: kind())
        return register

    fastser.register_serialization_lazy("fastser_test_outer", slow(outer))
    fastser.register_serialization_lazy("fastser_test_inner", slow(inner))
    runners = [in_thread(REGISTRY.for_type, kind) for kind in (outer, inner)]
    found: list[bool] = []

    def handler(signum: int, frame: object) -> None:
        threading.Timer(0.2, release.set).start()
        found.append(REGISTRY.for_type(inner) is not None)

    for _ in range(1000):  # until both runs have started
        if len(REGISTRY.running) >= 2 and not REGISTRY.lazy.get("fastser_test_inner"):
            break
        time.sleep(0.01)
    previous = signal.signal(signal.SIGALRM, handler)
    try:
        signal.setitimer(signal.ITIMER_REAL, 0.1)
        found.append(REGISTRY.for_type(outer) is not None)  # waits; the handler nests
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        release.set()
    for runner in runners:
        runner.join(10)
    assert found == [True, True] and not REGISTRY.waiting
