"""The proxy of NOTESD_FRONT (tests/openapi/prism_suites.py puts Prism's validation
proxy there), started once and shared by the notesd processes a suite starts one
after the other.

Owns the proxies a test process starts and the relays behind them. A proxy's
upstream is fixed when it starts, and starting one (Prism loads Node and its
modules, then the description) costs seconds, while a suite starts a notesd per
class. So each proxy forwards to a TCP relay in this process, and the relay joins
each connection it accepts to the notesd that holds the proxy at that moment.
A notesd takes a free proxy when it starts and gives it back when it stops; a
second notesd running at the same time gets a proxy of its own. Giving a proxy
back ends every connection relayed to that notesd, so no connection outlives its
server. The relay copies bytes and nothing else: a reset from notesd is passed
on as a reset, an end of stream as an end of stream.

notes_testlib records the answers; this module does not read HTTP.
"""
import atexit
import os
import socket
import struct
import subprocess
import tempfile
import threading

STOP_TIMEOUT = 30  # seconds a proxy gets to exit on SIGTERM before it is killed


class Relay:
    """Listens on a loopback port the kernel picks; joins each connection to
    127.0.0.1:`target` (refused at once while there is no target)."""

    def __init__(self):
        self._listener = socket.create_server(("127.0.0.1", 0), backlog=128)
        self.port = self._listener.getsockname()[1]
        self._lock = threading.Lock()
        self._target = None
        self._pairs = set()  # (accepted, upstream) sockets, both open
        threading.Thread(target=self._accept, name=f"relay-{self.port}", daemon=True).start()

    def retarget(self, port):
        """Points new connections at `port` (None: refuse them) and ends the ones open."""
        with self._lock:
            self._target = port
            pairs, self._pairs = list(self._pairs), set()
        for pair in pairs:
            for s in pair:
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def close(self):
        self.retarget(None)
        self._listener.close()

    def _accept(self):
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return  # closed
            with self._lock:
                target = self._target
            try:
                if target is None:
                    raise OSError("no notesd behind the relay")
                upstream = socket.create_connection(("127.0.0.1", target))
            except OSError:
                _reset(client)
                continue
            pair = (client, upstream)
            with self._lock:
                self._pairs.add(pair)
            done = threading.Barrier(2, action=lambda: self._closed(pair))
            for src, dst in (pair, pair[::-1]):
                threading.Thread(target=self._pump, args=(src, dst, done), daemon=True).start()

    def _closed(self, pair):
        with self._lock:
            self._pairs.discard(pair)
        for s in pair:
            s.close()

    @staticmethod
    def _pump(src, dst, done):
        """Copies src to dst until src ends (then ends dst's sending side) or is
        reset (then resets dst)."""
        try:
            while True:
                data = src.recv(65536)
                if not data:
                    break
                dst.sendall(data)
            dst.shutdown(socket.SHUT_WR)
        except ConnectionResetError:
            # A reset for a reset: dst closes with SO_LINGER 0 when the pair is closed,
            # and SHUT_RD wakes the thread reading it (close() would not).
            _linger_zero(dst)
            try:
                dst.shutdown(socket.SHUT_RD)
            except OSError:
                pass
        except OSError:
            pass  # the other side is gone, or retarget() ended the pair
        done.wait()


def _linger_zero(sock):
    """Makes close() send a reset rather than an end of stream."""
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    except OSError:
        pass


def _reset(sock):
    _linger_zero(sock)
    sock.close()


class Front:
    """One proxy process (`command` + the relay's URL + its port) and its relay."""

    def __init__(self, command, port, log_dir):
        self.relay = Relay()
        self.port = port
        self.owner = None
        with open(os.path.join(log_dir or tempfile.gettempdir(),
                               f"front-{os.getpid()}-{port}.log"), "w") as log:
            self.proc = subprocess.Popen([*command, f"http://127.0.0.1:{self.relay.port}", str(port)],
                                         stdout=log, stderr=subprocess.STDOUT)

    def give_back(self):
        """Ends the connections relayed to the notesd that held this proxy, and frees it."""
        self.relay.retarget(None)
        self.owner = None

    def stop(self):
        self.relay.close()
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


_fronts = []  # every Front this process started, free ones reused


def take(owner, upstream_port, command, free_port, log_dir):
    """A running Front no notesd holds (or a new one), now relaying to upstream_port."""
    front = next((f for f in _fronts if f.owner is None and f.proc.poll() is None), None)
    if front is None:
        front = Front(command, free_port(), log_dir)
        _fronts.append(front)
    front.owner = owner
    front.relay.retarget(upstream_port)
    return front


@atexit.register
def _stop_all():
    """SIGTERM, so each proxy writes out its log before the process that reads it
    (prism_suites.py) counts the lines. This module stops its own proxies: in
    notes_testlib's list of leftovers, killed at exit, they would get SIGKILL."""
    for front in _fronts:
        front.stop()
