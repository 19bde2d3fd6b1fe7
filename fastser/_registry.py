"""The registry: serializer families by name, and the dispatch family's per-type functions.

Dispatch entries are found by exact type when serializing and by registered name when
deserializing; a registration can wait until the module that defines its type is in use
(numpy is registered that way, so fastser never imports it on its own).
"""

import threading
from collections.abc import Callable, Mapping
from typing import Any, Final, Optional

from ._errors import DeserializationError
from ._types import Frame, Header

# A family's dumps takes the object and the caller's context (or None) and returns
# (header, frames), or raises NotImplementedError to hand the object to the next family.
FamilyDumps = Callable[[Any, Optional[Mapping[str, Any]]], tuple[Header, list[Frame]]]
FamilyLoads = Callable[[Header, list[Frame]], Any]
# A dispatch entry's functions: obj -> (header, frames) and (header, frames) -> obj.
TypeDumps = Callable[[Any], tuple[Header, list[Frame]]]
TypeLoads = Callable[[Header, list[Frame]], Any]
# A short array record's fields (dtype, shape, flags, frame) -> the array (_numpy.short_array).
ShortLoads = Callable[[str, list[Any], int, Frame], Any]


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
        # Set on fastser's own numpy entry only: loads of a short array record (wire version
        # 8) from its fields, (dtype, shape, flags, frame), without a header dict.
        self.short_loads: Optional[ShortLoads] = None


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
        # Every top-level module ever given one, whether its registrations ran or not; and
        # the lock they run under (reentrant: a registration may look a type up itself).
        self.lazy_modules: set[str] = set()
        self.lazy_lock = threading.RLock()
        # Types known to have no entry (no lazy registration pending for their module):
        # the pickle fallback asks about every task's type, so misses are remembered.
        # Any registration empties it.
        self.misses: set[type] = set()

    def for_type(self, cls: type) -> Optional[DispatchEntry]:
        if cls in self.misses:  # first: asked for every task, whose type is a miss
            return None
        entry = self.by_type.get(cls)
        if entry is None:
            if self.lazy_modules and self._run_lazy(cls.__module__.partition(".")[0]):
                entry = self.by_type.get(cls)
            if entry is None:
                self.misses.add(cls)
                # A registration in another thread between the lookup and the add: undo.
                entry = self.by_type.get(cls)
                if entry is not None:
                    self.misses.discard(cls)
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
        """Run the registrations waiting for `toplevel`, once; whether it ever had any (the
        caller then looks again). Another thread may be running them (numpy's import takes
        a while): the lock waits for it, so the second look finds what they registered."""
        if toplevel not in self.lazy_modules:
            return False
        with self.lazy_lock:
            registers = self.lazy.pop(toplevel, None)
            if registers is not None:
                for register in registers:
                    register()
        return True


REGISTRY: Final = Registry()


def register_serialization(cls: type, serialize_fn: TypeDumps, deserialize_fn: TypeLoads,
                           *, name: Optional[str] = None) -> None:
    if name is None:
        name = f"{cls.__module__}.{cls.__qualname__}"
    entry = DispatchEntry(name, serialize_fn, deserialize_fn)
    REGISTRY.by_type[cls] = entry
    REGISTRY.by_name[name] = entry
    REGISTRY.misses.clear()


def register_serialization_lazy(toplevel_module: str, register: Callable[[], None]) -> None:
    with REGISTRY.lazy_lock:
        REGISTRY.lazy.setdefault(toplevel_module, []).append(register)
        REGISTRY.lazy_modules.add(toplevel_module)
    REGISTRY.misses.clear()


def register_serialization_family(name: str, dumps: FamilyDumps, loads: FamilyLoads,
                                  accepts: Optional[Callable[[Any], bool]] = None) -> None:
    REGISTRY.families[name] = Family(name, dumps, loads, accepts)
    REGISTRY.families_version += 1
