"""The backends distributed finds for fastser:// and fastser-tls:// (the entry points of
distributed.comm.backends name them): distributed's TCP (TLS) backend with fastser's
connector and listener.
"""

from distributed.comm.tcp import TCPBackend, TLSBackend

from fastser.dask.comm import FastserConnector, FastserTLSConnector
from fastser.dask.listener import FastserListener, FastserTLSListener


class FastserBackend(TCPBackend):
    """The backend of fastser:// (entry point "fastser" of distributed.comm.backends)."""

    _connector_class = FastserConnector
    _listener_class = FastserListener


class FastserTLSBackend(TLSBackend):
    """The backend of fastser-tls:// (entry point "fastser-tls")."""

    _connector_class = FastserTLSConnector
    _listener_class = FastserTLSListener
