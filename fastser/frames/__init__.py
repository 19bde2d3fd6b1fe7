"""Frames: what is done to a list of bytes-like frames, knowing nothing of messages —
splitting and joining large frames (split, placed, address), compressing them (compression),
and writing and reading them on a byte stream (stream: the prelude, FrameReader)."""
