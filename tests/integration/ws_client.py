"""A WebSocket client (RFC 6455) for the tests, on the standard library's
sockets: the handshake, masked frames written by hand (so a test can also
write the frames a careless client would: too long, fragmented, unmasked),
and the frames the server sends, read one by one or as whole messages.

    ws = WebSocket(port, "/ws/echo")          # handshake; raises on anything but 101
    ws.send("hello")                           # one text frame
    assert ws.recv() == (OP_TEXT, b"hello")    # one whole message
    assert ws.close() == 1000                  # close handshake; the server's code
"""
import base64
import hashlib
import os
import socket
import struct

GUID = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
OP_CONT, OP_TEXT, OP_BINARY, OP_CLOSE, OP_PING, OP_PONG = 0x0, 0x1, 0x2, 0x8, 0x9, 0xA


class HandshakeRefused(Exception):
    def __init__(self, status, headers, body):
        super().__init__(f"handshake answered {status}: {body[:200]!r}")
        self.status, self.headers, self.body = status, headers, body


class Closed(Exception):
    """The server closed the WebSocket: its close code (None if none) and reason."""

    def __init__(self, code, reason=b""):
        super().__init__(f"closed by the server: {code} {reason!r}")
        self.code, self.reason = code, reason


def accept_key(key):
    return base64.b64encode(hashlib.sha1(key.encode() + GUID).digest()).decode()


def frame(opcode, payload=b"", fin=True, mask=True, rsv=0, length=None):
    """The bytes of one frame; `length` overrides the declared payload length."""
    n = len(payload) if length is None else length
    head = bytes([(0x80 if fin else 0) | rsv << 4 | opcode])
    bit = 0x80 if mask else 0
    if n < 126:
        head += bytes([bit | n])
    elif n < 65536:
        head += bytes([bit | 126]) + struct.pack("!H", n)
    else:
        head += bytes([bit | 127]) + struct.pack("!Q", n)
    if not mask:
        return head + payload
    key = os.urandom(4)
    return head + key + bytes(b ^ key[i % 4] for i, b in enumerate(payload))


class WebSocket:
    def __init__(self, port, path, headers=None, timeout=10, host="127.0.0.1", rcvbuf=None):
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        if rcvbuf is not None:
            # set before connecting, so the window it implies is the one offered
            self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
        self.sock.settimeout(timeout)
        self.sock.connect((host, port))
        self.buf = b""
        key = base64.b64encode(os.urandom(16)).decode()
        fields = {"Host": f"{host}:{port}", "Upgrade": "websocket", "Connection": "Upgrade",
                  "Sec-WebSocket-Key": key, "Sec-WebSocket-Version": "13"}
        fields.update(headers or {})
        head = f"GET {path} HTTP/1.1\r\n" + "".join(
            f"{k}: {v}\r\n" for k, v in fields.items() if v is not None) + "\r\n"
        self.sock.sendall(head.encode())
        status, self.headers = self._read_head()
        if status != 101:
            body = self._read_body(self.headers)
            self.sock.close()
            raise HandshakeRefused(status, self.headers, body)
        if self.headers.get("sec-websocket-accept") != accept_key(key):
            raise AssertionError(f"bad Sec-WebSocket-Accept: {self.headers}")

    def _fill(self, n):
        while len(self.buf) < n:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise ConnectionError("EOF")
            self.buf += chunk

    def _take(self, n):
        self._fill(n)
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def _read_head(self):
        while b"\r\n\r\n" not in self.buf:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise ConnectionError(f"EOF in the handshake: {self.buf!r}")
            self.buf += chunk
        head, self.buf = self.buf.split(b"\r\n\r\n", 1)
        lines = head.decode("latin-1").split("\r\n")
        status = int(lines[0].split()[1])
        headers = {}
        for line in lines[1:]:
            k, _, v = line.partition(":")
            headers[k.strip().lower()] = v.strip()
        return status, headers

    def _read_body(self, headers):
        n = int(headers.get("content-length", "0"))
        return self._take(n) if n else b""

    # ---- sending ----

    def send_raw(self, data):
        self.sock.sendall(data)

    def send(self, payload, binary=None):
        """One whole message in one frame: text for str, binary for bytes unless told."""
        if isinstance(payload, str):
            payload, opcode = payload.encode(), OP_TEXT
        else:
            opcode = OP_BINARY if binary is not False else OP_TEXT
        self.sock.sendall(frame(opcode, payload))

    def send_fragments(self, parts, opcode=OP_TEXT):
        """One message in len(parts) frames."""
        data = b""
        for i, part in enumerate(parts):
            data += frame(opcode if i == 0 else OP_CONT, part, fin=i == len(parts) - 1)
        self.sock.sendall(data)

    def ping(self, payload=b""):
        self.sock.sendall(frame(OP_PING, payload))

    # ---- receiving ----

    def recv_frame(self):
        """(fin, opcode, payload) of the next frame from the server."""
        b0, b1 = self._take(2)
        if b1 & 0x80:
            raise AssertionError("the server masked a frame")
        n = b1 & 0x7F
        if n == 126:
            n = struct.unpack("!H", self._take(2))[0]
        elif n == 127:
            n = struct.unpack("!Q", self._take(8))[0]
        return bool(b0 & 0x80), b0 & 0x0F, self._take(n)

    def recv(self):
        """(opcode, payload) of the next whole data message; pongs are skipped,
        a close frame raises Closed."""
        opcode, data = None, b""
        while True:
            fin, op, payload = self.recv_frame()
            if op == OP_CLOSE:
                code = struct.unpack("!H", payload[:2])[0] if len(payload) >= 2 else None
                raise Closed(code, payload[2:])
            if op in (OP_PING, OP_PONG):
                continue
            if op != OP_CONT:
                opcode = op
            data += payload
            if fin:
                return opcode, data

    def recv_close(self):
        """Reads frames until the server's close frame; returns (code, reason, data messages
        seen before it)."""
        seen = []
        while True:
            try:
                seen.append(self.recv())
            except Closed as c:
                return c.code, c.reason, seen

    def close(self, code=1000, reason=b""):
        """The client's close handshake: sends a close frame, reads until the server's,
        then until the server closes TCP. Returns the server's close code."""
        payload = struct.pack("!H", code) + reason if code is not None else b""
        self.sock.sendall(frame(OP_CLOSE, payload))
        code, _, _ = self.recv_close()
        self.wait_eof()
        return code

    def wait_eof(self):
        """Reads (and drops) until the server closes the connection; True on EOF, False on a
        reset."""
        try:
            while self.sock.recv(65536):
                pass
            return True
        except ConnectionResetError:
            return False
        finally:
            self.sock.close()

    def abort(self):
        self.sock.close()
