"""distributed's comm tests (distributed/comm/tests/test_comms.py) with fastser added to
their schemes: every test there that runs a scheme-generic check on "tcp://" or "tls://"
runs it here on "fastser://" and "fastser-tls://", through their own check functions.
Their file is not edited; scripts/distributed_suite.sh runs this beside it.
"""

from typing import Any

from distributed.comm.tests.test_comms import (EXTERNAL_IP4, check_addresses,
                                               check_client_server,
                                               check_comm_closed_explicit,
                                               check_comm_closed_implicit,
                                               check_connect_timeout,
                                               check_deserialize,
                                               check_deserialize_eoferror,
                                               check_deserialize_roundtrip,
                                               check_many_listeners, check_repr,
                                               get_comm_pair, tcp_eq, tls_kwargs)
from distributed.utils_test import gen_test


def get_fastser_comm_pair(**kwargs: Any) -> Any:
    return get_comm_pair("fastser://", **kwargs)


def get_fastser_tls_comm_pair(**kwargs: Any) -> Any:
    return get_comm_pair("fastser-tls://", **tls_kwargs, **kwargs)


@gen_test()
async def test_fastser_client_server_ipv4() -> None:
    await check_client_server("fastser://127.0.0.1", tcp_eq("127.0.0.1"))
    await check_client_server("fastser://127.0.0.1:3221", tcp_eq("127.0.0.1", 3221))
    await check_client_server("fastser://0.0.0.0", tcp_eq("0.0.0.0"), tcp_eq(EXTERNAL_IP4))
    await check_client_server("fastser://", tcp_eq("0.0.0.0"), tcp_eq(EXTERNAL_IP4))


@gen_test()
async def test_fastser_tls_client_server_ipv4() -> None:
    await check_client_server("fastser-tls://127.0.0.1", tcp_eq("127.0.0.1"), **tls_kwargs)
    await check_client_server("fastser-tls://", tcp_eq("0.0.0.0"), tcp_eq(EXTERNAL_IP4),
                              **tls_kwargs)


@gen_test()
async def test_fastser_comm_closed_implicit() -> None:
    await check_comm_closed_implicit("fastser://127.0.0.1")


@gen_test()
async def test_fastser_tls_comm_closed_implicit() -> None:
    await check_comm_closed_implicit("fastser-tls://127.0.0.1", **tls_kwargs)


@gen_test()
async def test_fastser_comm_closed_explicit() -> None:
    await check_comm_closed_explicit("fastser://127.0.0.1")


@gen_test()
async def test_fastser_tls_comm_closed_explicit() -> None:
    await check_comm_closed_explicit("fastser-tls://127.0.0.1", **tls_kwargs)


@gen_test()
async def test_fastser_connect_timeout() -> None:
    await check_connect_timeout("fastser://127.0.0.1:44444")


@gen_test()
async def test_fastser_many_listeners() -> None:
    await check_many_listeners("fastser://127.0.0.1")
    await check_many_listeners("fastser://0.0.0.0")
    await check_many_listeners("fastser://")


@gen_test()
async def test_fastser_deserialize() -> None:
    await check_deserialize("fastser://")


@gen_test()
async def test_fastser_deserialize_roundtrip() -> None:
    await check_deserialize_roundtrip("fastser://")


@gen_test()
async def test_fastser_deserialize_eoferror() -> None:
    await check_deserialize_eoferror("fastser://")


@gen_test()
async def test_fastser_repr() -> None:
    a, b = await get_fastser_comm_pair()
    assert a.local_address in repr(b)
    assert b.local_address in repr(a)
    await check_repr(a, b)


@gen_test()
async def test_fastser_tls_repr() -> None:
    a, b = await get_fastser_tls_comm_pair()
    await check_repr(a, b)


@gen_test()
async def test_fastser_addresses() -> None:
    a, b = await get_fastser_comm_pair()
    await check_addresses(a, b)


@gen_test()
async def test_fastser_tls_addresses() -> None:
    a, b = await get_fastser_tls_comm_pair()
    await check_addresses(a, b)
