"""fastser:// and fastser-tls:// — distributed comm backends whose messages are fastser's.

Importing this package registers the bridge families (a payload crossing between
fastser:// and tcp:// keeps its frames); distributed finds the backends by the entry
points of distributed.comm.backends, which name the two below. Uncompiled: its modules
subclass distributed's classes or build on them, and distributed is not a build dependency.

  comm      the established connection: Comm.read/write, the greeting, the handshake keys
  codecs    the Encoder and Decoder a read or write uses, and DASK_LIMITS
  listener  one port for fastser:// and tcp:// peers, the handshake deadline
  backend   the backends: fastser's connector and listener
  bridge    distributed's payloads and wrappers as fastser's, and back
"""

from fastser.dask import bridge  # noqa: F401  (registers the bridge families)
from fastser.dask.backend import FastserBackend, FastserTLSBackend
from fastser.dask.codecs import DASK_LIMITS

__all__ = ["DASK_LIMITS", "FastserBackend", "FastserTLSBackend"]
