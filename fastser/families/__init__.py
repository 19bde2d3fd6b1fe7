"""Serializer families: how one object becomes (header, frames) and back — the registry of
families and dispatch types, the dispatch family (bytes-likes, array.array, numpy), the
pickle family (the one place pickle is called), and the family chain (serialize)."""
