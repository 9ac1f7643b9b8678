#!/usr/bin/env python3
"""Throws hostile requests at a vgpu tracker's line socket and its /metrics for a given time, in rounds, and prints
how many of each kind it sent. Standard library only; every socket has a timeout, so it never hangs.

usage: hostile-requests.py TRACKER_PORT METRICS_PORT SECONDS
"""
import os
import random
import socket
import sys
import threading
import time

HOST = "127.0.0.1"
counts = {}
lock = threading.Lock()


def count(kind, n=1):
    with lock:
        counts[kind] = counts.get(kind, 0) + n


def send(port, data, read=True, hold=0.0):
    """One connection: sends data, reads what comes back until the peer closes or 2 s pass, holds it hold s."""
    try:
        with socket.create_connection((HOST, port), timeout=2) as s:
            s.sendall(data)
            if hold:
                time.sleep(hold)
            if read:
                s.settimeout(2)
                try:
                    while s.recv(65536):
                        pass
                except OSError:
                    pass
    except OSError:
        count("refused or reset")


def token(rng):
    return "v2." + "".join(rng.choice("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_") for _ in range(180))


def line_requests(port, rng):
    """Malformed lines and forged tokens, several per connection, the connection closed after."""
    lines = [
        b"hello",
        b"assembly",
        b"assembly x n1",
        b"assembly 1 n1;reboot",
        b"done 1 n1 abc",
        b"done 999999 n9 0",
        b"status please",
        ("worker 1 1 127.0.0.1:1 someone " + token(rng)).encode(),
        ("agent poll " + token(rng) + " 1").encode(),
        ("agent done " + token(rng) + " 1 1 ok 0 0").encode(),
        b"assembly \x01\x02\x03",
        b"\xff\xfe\xfd" * 50,
    ]
    payload = b"\n".join(rng.sample(lines, len(lines))) + b"\n"
    send(port, payload)
    count("malformed or forged lines", len(lines))


def long_line(port, rng):
    """A line far over the request bound: 64 KiB to 1 MiB, with or without its line end."""
    size = rng.choice([64, 256, 1024]) * 1024
    send(port, b"assembly " + b"x" * size + (b"\n" if rng.random() < 0.5 else b""))
    count("long lines (64 KiB-1 MiB)")


def garbage(port, rng):
    send(port, os.urandom(rng.choice([100, 4096, 65536])), read=False)
    count("random bytes")


def unfinished(port, n, hold):
    """n connections at once, each with a request that never ends, held open hold seconds."""
    threads = [threading.Thread(target=send, args=(port, b"assembly 42 n", False, hold)) for _ in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    count("unfinished requests held open", n)


def metrics_garbage(port, rng):
    choice = rng.randrange(6)
    if choice == 0:
        send(port, b"GET /metrics HTTP/1.1\r\nHost: x\r\n")  # headers never end
        count("/metrics: unfinished headers")
    elif choice == 1:
        send(port, b"GET /" + b"a" * 20000 + b" HTTP/1.1\r\n\r\n")
        count("/metrics: 20 KB request line")
    elif choice == 2:
        send(port, b"GET /metrics HTTP/1.1\r\n" + b"X-Junk: " + b"b" * 9000 + b"\r\n\r\n")
        count("/metrics: 9 KB header")
    elif choice == 3:
        send(port, os.urandom(2048))
        count("/metrics: random bytes")
    elif choice == 4:
        send(port, b"POST /metrics HTTP/1.0\r\nContent-Length: 100000\r\n\r\n" + b"z" * 1000)
        count("/metrics: POST")
    else:
        send(port, b"GET /metrics HTTP/1.0\r\nHost: x\r\n\r\n")
        count("/metrics: scrapes")


def main():
    tracker, metrics, seconds = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
    rng = random.Random(35)
    end = time.monotonic() + seconds
    rounds = 0
    while time.monotonic() < end:
        rounds += 1
        workers = []
        for _ in range(8):
            for job in (line_requests, long_line, garbage, metrics_garbage, metrics_garbage):
                port = metrics if job is metrics_garbage else tracker
                workers.append(threading.Thread(target=job, args=(port, random.Random(rng.random()))))
        workers.append(threading.Thread(target=unfinished, args=(tracker, 150, 1.0)))
        workers.append(threading.Thread(target=unfinished, args=(metrics, 100, 1.0)))
        for t in workers:
            t.start()
        for t in workers:
            t.join()
    total = sum(counts.values())
    print(f"hostile: {rounds} rounds in {seconds:.0f} s, {total} requests:")
    for kind in sorted(counts):
        print(f"  {counts[kind]:7d} {kind}")


if __name__ == "__main__":
    main()
