#!/usr/bin/env python3
"""An OpenSSL client of imd's native TLS mode (PROTOCOL.md §1-§3), as a non-Go app is one.

It pipelines: each connection authenticates, then writes every request with its own
sendall (so one TLS record per frame, records reaching the server split across its reads)
without waiting for answers, some bodies zlib-compressed, while a reader thread matches
every answer to its request and answers pushes with PUSH_ACK. Its verdict is one JSON line
on stdout; the exit status is 0 only when every connection got every answer with code 0.

Arguments come as one JSON object (argv[1]): host, port, ca (PEM file), sni, tls ("1.2" or
"1.3"), mode ("pipeline" or "first"), connections, tokens (one per connection, in turn),
timeout (seconds); for pipeline also seed, sends, max_body, compress_min (bodies at least
this long are compressed half the time), coalesce (the share of frames written in the
record of the frame before), to_user or topic, and pushes (MESSAGE pushes each
connection waits for besides its answers). Connection i is device 1000+i in pipeline mode.
"""
import json
import os
import random
import select
import socket
import ssl
import struct
import sys
import threading
import time
import zlib

MAGIC, VERSION, HEADER = 0x494D, 1, struct.Struct(">HBHHQII")
AUTH, HEARTBEAT, SEND, SEND_ACK, MESSAGE, PUSH_ACK = 1, 2, 4, 5, 6, 7


def frame(cmd, seq, body, compress):
    raw = json.dumps(body, separators=(",", ":")).encode()
    flags = 0
    if compress:
        raw, flags = zlib.compress(raw), 1
    return HEADER.pack(MAGIC, VERSION, cmd, flags, seq * 10, seq, len(raw)) + raw


def proxy_v2(src, dst):
    sig = b"\r\n\r\n\x00\r\nQUIT\n"
    addrs = socket.inet_aton(src[0]) + socket.inet_aton(dst[0]) + struct.pack(">HH", src[1], dst[1])
    return sig + bytes([0x21, 0x11]) + struct.pack(">H", len(addrs)) + addrs


def read_exact(s, n):
    buf = bytearray()
    while len(buf) < n:
        chunk = s.recv(n - len(buf))
        if not chunk:
            raise EOFError("connection closed after %d of %d bytes" % (len(buf), n))
        buf += chunk
    return bytes(buf)


def read_frame(s):
    magic, version, cmd, flags, _, seq, length = HEADER.unpack(read_exact(s, HEADER.size))
    if magic != MAGIC or version != VERSION:
        raise ValueError("bad frame header %x/%d" % (magic, version))
    body = read_exact(s, length)
    if flags & 1:
        body = zlib.decompress(body)
    return cmd, seq, json.loads(body)


def dial(cfg, index):
    raw = socket.create_connection((cfg["host"], cfg["port"]), timeout=cfg["timeout"])
    raw.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    if cfg.get("proxy", True):
        raw.sendall(proxy_v2(("198.51.100.%d" % (index % 250 + 1), 40000 + index), ("127.0.0.1", 443)))
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.load_verify_locations(cfg["ca"])
    version = {"1.2": ssl.TLSVersion.TLSv1_2, "1.3": ssl.TLSVersion.TLSv1_3}[cfg["tls"]]
    ctx.minimum_version = ctx.maximum_version = version
    return ctx.wrap_socket(raw, server_hostname=cfg["sni"])


def first_frame(cfg, index, result):
    """A fresh connection whose first frame, written right after the handshake, is answered."""
    s = dial(cfg, index)
    try:
        cmd = HEARTBEAT if index % 2 else AUTH
        body = {} if cmd == HEARTBEAT else {"token": cfg["tokens"][index % len(cfg["tokens"])], "device_id": 9000 + index}
        s.sendall(frame(cmd, 1, body, False))
        while True:
            got, seq, env = read_frame(s)
            if got == cmd and seq == 1:
                if env.get("code") != 0:
                    result["errors"].append("first frame %d: code %s %s" % (cmd, env.get("code"), env.get("msg")))
                return
    finally:
        s.close()


def pipeline(cfg, index, result):
    """One connection: AUTH, then every SEND written without waiting, PUSH_ACKs in between.

    One thread drives the socket (non-blocking, select): OpenSSL does not allow one SSL
    object to be read and written from two threads at once, and a client that does so
    corrupts its own records.
    """
    rnd = random.Random(cfg["seed"] * 1000 + index)
    s = dial(cfg, index)
    s.sendall(frame(AUTH, 1, {"token": cfg["tokens"][index % len(cfg["tokens"])], "device_id": 1000 + index}, False))
    out = []  # what waits to be written: each item one send call, so one TLS record
    early = 0  # the device is bound before AUTH is answered: pushes may come first
    while True:
        cmd, seq, env = read_frame(s)
        if cmd == MESSAGE:
            out.append(frame(PUSH_ACK, seq, {}, False))
            early += 1
            continue
        if cmd == AUTH and seq == 1:
            if env.get("code") != 0:
                raise RuntimeError("auth: code %s %s" % (env.get("code"), env.get("msg")))
            break
    sends = cfg["sends"]
    for k in range(sends):
        size = rnd.randint(0, cfg["max_body"])
        body = {"client_msg_id": "p%d-%d-%d" % (cfg["seed"], index, k), "type": "text",
                "content": {"text": "x" * size}}
        if cfg.get("to_user"):
            body["to_user"] = cfg["to_user"]
        else:
            body["topic"] = cfg["topic"]
        data = frame(SEND, k + 2, body, size >= cfg["compress_min"] and rnd.random() < 0.5)
        if out and rnd.random() < cfg.get("coalesce", 0):
            out[-1] += data  # several frames in one record
        else:
            out.append(data)
    pending = set(range(2, sends + 2))
    pushes, want_pushes = early, cfg.get("pushes", 0)  # pushes: how many this connection waits for
    result["pushes"] += early
    inbuf = bytearray()
    failures = []
    s.setblocking(False)
    deadline = time.monotonic() + cfg["timeout"]
    try:
        while (pending or pushes < want_pushes) and time.monotonic() < deadline:
            readable, writable, _ = select.select([s], [s] if out else [], [], 0.05)
            if writable and out:
                try:
                    n = s.send(out[0])
                    out[0] = out[0][n:]
                    if not out[0]:
                        out.pop(0)
                except (ssl.SSLWantWriteError, ssl.SSLWantReadError):
                    pass
            while readable or s.pending():
                readable = False
                try:
                    chunk = s.recv(65536)
                except (ssl.SSLWantReadError, ssl.SSLWantWriteError):
                    break
                if not chunk:
                    raise EOFError("server closed the connection")
                inbuf += chunk
            while len(inbuf) >= HEADER.size:
                magic, version, cmd, flags, _, seq, length = HEADER.unpack_from(inbuf)
                if magic != MAGIC or version != VERSION:
                    raise ValueError("bad frame header %x/%d" % (magic, version))
                if len(inbuf) < HEADER.size + length:
                    break
                body = bytes(inbuf[HEADER.size:HEADER.size + length])
                del inbuf[:HEADER.size + length]
                env = json.loads(zlib.decompress(body) if flags & 1 else body)
                if cmd == MESSAGE:
                    out.append(frame(PUSH_ACK, seq, {}, False))
                    pushes += 1
                    result["pushes"] += 1
                    continue
                if cmd != SEND_ACK or seq not in pending:
                    failures.append("answer cmd %d seq %d matches no request" % (cmd, seq))
                elif env.get("code") != 0:
                    failures.append("seq %d: code %s %s" % (seq, env.get("code"), env.get("msg")))
                pending.discard(seq)
                result["answered"] += 1
        if pending or pushes < want_pushes:
            failures.append("%d answers and %d of %d pushes missing after %ss" % (
                len(pending), want_pushes - pushes, want_pushes, cfg["timeout"]))
    except Exception as e:
        failures.append("connection broke with %d answers missing: %r" % (len(pending), e))
    finally:
        result["written"] += sends
        s.close()
    result["errors"].extend("connection %d: %s" % (index, f) for f in failures)


def main():
    cfg = json.loads(sys.argv[1])
    cfg.setdefault("timeout", 30)
    result = {"answered": 0, "pushes": 0, "errors": [], "written": 0}
    work = pipeline if cfg["mode"] == "pipeline" else first_frame

    def run(i):
        try:
            work(cfg, i, result)
        except Exception as e:
            result["errors"].append("connection %d: %r" % (i, e))

    threads = [threading.Thread(target=run, args=(i,)) for i in range(cfg["connections"])]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    print(json.dumps(result))
    sys.exit(1 if result["errors"] else 0)


if __name__ == "__main__":
    main()
