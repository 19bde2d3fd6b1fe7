"""The keys of a payload header (the map a serializer family writes beside its frames) that
fastser itself sets or reads, and the names of the built-in families and types in them.
Part of the wire format (docs/wire-format.md, "Payload headers")."""

from typing import Final

HEADER_SERIALIZER: Final = "serializer"  # the family that made the frames
HEADER_TYPE: Final = "type"  # the dispatch family's registered name of the type
HEADER_COMPRESSION: Final = "compression"  # one entry per frame: None or a compressor's name
PICKLE_FAMILY: Final = "pickle"
# The dispatch family's numpy header (families/numpy.py writes it; codec/array_records.py
# has the short record that stands for it).
NUMPY_TYPE: Final = "numpy.ndarray"
HEADER_DTYPE: Final = "dtype"
HEADER_SHAPE: Final = "shape"
HEADER_ORDER: Final = "order"
HEADER_WRITEABLE: Final = "writeable"
