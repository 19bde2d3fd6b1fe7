"""The codec: a message to frames and back — the wire constants (wire), how msgpack writes
the header (packing, marks, tuple_leads, array_records), the encoder's walk
(encoder), and the decoder with its checks (decoder, header, payload_frames, depth)."""
