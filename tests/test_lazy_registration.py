"""Lazy registrations (register_serialization_lazy) across threads and processes: one runs
once, another thread that needs it waits for it, a registration that imports does not
deadlock with a thread importing a module that registers, a child forked mid-registration
runs it again, and one that raises leaves the others waiting."""

import os
import signal
import sys
import threading
import types
import warnings
from pathlib import Path
from typing import Any

import pytest

import fastser


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
