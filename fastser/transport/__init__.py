"""Messages on byte streams: blocking sockets (sock) and asyncio streams (aio), each the
codec plus frames/stream's prelude, and the buffers messages are received into
(receive_buffer). The public faces are fastser.sock and fastser.aio."""
