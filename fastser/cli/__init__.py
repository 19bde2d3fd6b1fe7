"""python -m fastser: the demo round trip and the stream inspector."""
