"""An HTTP "server" on 127.0.0.1:PORT whose answers are slow or endless, by MODE.

- slow-headers: the status line and headers one byte every 0.5 s (forever, bounded by LIFETIME)
- chunked: valid headers, then an endless chunked JSON-ish body
- sse: valid SSE headers, then endless `data:` lines that are not the response
- delay=S: a correct minimal server/discover answer after S seconds
Usage: python slow_http.py PORT MODE
"""

import socket
import sys
import threading
import time

LIFETIME = 120.0
port, mode = int(sys.argv[1]), sys.argv[2]
started = time.monotonic()


def alive() -> bool:
    return time.monotonic() - started < LIFETIME


def read_request(conn: socket.socket) -> bytes:
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = conn.recv(65536)
        if not chunk:
            return data
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
    while len(body) < length:
        chunk = conn.recv(65536)
        if not chunk:
            break
        body += chunk
    return body


def serve(conn: socket.socket) -> None:
    try:
        read_request(conn)
        if mode == "slow-headers":
            head = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nX-Slow: " + b"a" * 10000
            for byte in head:
                if not alive():
                    return
                conn.sendall(bytes([byte]))
                time.sleep(0.5)
        elif mode == "chunked":
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n")
            piece = b"[" + b"1," * 32767 + b"\n"
            frame = b"%x\r\n%s\r\n" % (len(piece), piece)
            while alive():
                conn.sendall(frame)
        elif mode == "sse":
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\n")
            event = b'data: {"jsonrpc":"2.0","method":"notifications/message","params":{}}\n\n' * 512
            while alive():
                conn.sendall(event)
        elif mode.startswith("delay="):
            time.sleep(float(mode.split("=", 1)[1]))
            body = b'{"jsonrpc":"2.0","id":"ready","result":{"resultType":"complete"}}'
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n"
                         b"Connection: close\r\n\r\n%s" % (len(body), body))
    except OSError:
        pass
    finally:
        conn.close()


listener = socket.create_server(("127.0.0.1", port))
listener.settimeout(1.0)
while alive():
    try:
        client, _ = listener.accept()
    except TimeoutError:
        continue
    threading.Thread(target=serve, args=(client,), daemon=True).start()
