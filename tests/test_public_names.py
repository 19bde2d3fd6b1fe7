"""fastser's namespace holds its public names (`__all__`), its submodules and private names
only: a helper imported by the facade must not become `fastser.<helper>`."""

import types

import fastser


def test_no_helper_leaks() -> None:
    leaked = [name for name in dir(fastser)
              if not name.startswith("_") and name not in fastser.__all__
              and not isinstance(getattr(fastser, name), types.ModuleType)]
    assert leaked == []


def test_every_public_name_is_there_once() -> None:
    assert len(set(fastser.__all__)) == len(fastser.__all__)
    for name in fastser.__all__:
        assert hasattr(fastser, name), name
