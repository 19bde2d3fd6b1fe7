"""Guards that the suite looks at the installed build, never the source tree by accident;
and the fixtures several test modules share."""

import os
import pathlib
import sys
from collections.abc import Iterator
from typing import Any, Optional

import pytest

import fastser

SOURCE_TREE = pathlib.Path(__file__).resolve().parent.parent


def pytest_report_header() -> str:
    return f"fastser {fastser.__version__} from {pathlib.Path(fastser.__file__).parent}, " \
           f"COMPILED={fastser.COMPILED}, FASTSER_EXPECT={os.environ.get('FASTSER_EXPECT')}"


# Audit hooks cannot be removed: one is installed for the whole run, and records only while
# a test holds the find_class_events fixture.
_listening: list[Optional[list[Any]]] = [None]


def _record_find_class(event: str, args: tuple[Any, ...]) -> None:
    events = _listening[0]
    if events is not None and event == "pickle.find_class":
        events.append(args)


sys.addaudithook(_record_find_class)


@pytest.fixture
def find_class_events() -> Iterator[list[Any]]:
    """The (module, name) of every pickle.find_class audit event raised during the test."""
    events: list[Any] = []
    _listening[0] = events
    try:
        yield events
    finally:
        _listening[0] = None
