#!/usr/bin/env python3
"""A stand-in for idle-gpu-tracker that speaks the SPANK bridge's line protocol.

Listens on 127.0.0.1 (or a UNIX socket) only. Every request line is appended to --log. Replies:
  assembly <jobid> <node>  -> the lines of --reply-file, one per request in order,
                              the last one repeated (a rewritten file starts over); {jobid} and {node} are filled in.
                              "!silent" keeps the connection open without answering,
                              "!close" closes it without a reply.
  done <jobid> <node> <st> -> "ok"
  anything else            -> "error unknown request"
With --munge-socket every request must end in "munge=<credential>" whose payload is
the rest of the line; unmunge checks it, and the log line gets " uid=<uid>" appended.
"""
import argparse
import os
import socket
import subprocess
import sys
import threading


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port-file", help="listen on 127.0.0.1, write the chosen port here")
    ap.add_argument("--unix", help="listen on this UNIX socket instead")
    ap.add_argument("--reply-file", required=True)
    ap.add_argument("--log", required=True)
    ap.add_argument("--munge-socket", help="require MUNGE credentials, checked by unmunge")
    args = ap.parse_args()

    served = {"assembly": 0}
    lock = threading.Lock()

    if args.unix:
        srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        srv.bind(args.unix)
        srv.listen(16)
    else:
        srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        srv.bind(("127.0.0.1", 0))
        srv.listen(16)
        with open(args.port_file + ".tmp", "w") as f:
            f.write(str(srv.getsockname()[1]))
        os.replace(args.port_file + ".tmp", args.port_file)

    def log(line):
        with lock, open(args.log, "a") as f:
            f.write(line + "\n")

    def unmunge(cred, payload):
        """The credential's uid when it is valid and carries exactly payload."""
        try:
            out = subprocess.run(["unmunge", "--socket=" + args.munge_socket],
                                 input=cred.encode(), capture_output=True, timeout=10)
        except (OSError, subprocess.TimeoutExpired):
            return None
        head, _, body = out.stdout.partition(b"\n\n")
        fields = dict(l.split(b":", 1) for l in head.splitlines() if b":" in l)
        if out.returncode != 0 or body != payload.encode():
            return None
        return fields.get(b"UID", b"").split(b"(")[-1].rstrip(b") ").decode()

    def handle(conn):
        with conn:
            conn.settimeout(10)
            data = b""
            try:
                while b"\n" not in data and len(data) < 8192:
                    chunk = conn.recv(8192)
                    if not chunk:
                        break
                    data += chunk
            except OSError:
                return
            line = data.split(b"\n", 1)[0].decode("ascii", "replace")
            if args.munge_socket:
                base, sep, cred = line.rpartition(" munge=")
                uid = unmunge(cred, base) if sep else None
                if uid is None:
                    log("AUTH-FAIL " + line[:80])
                    conn.sendall(b"error unauthenticated request\n")
                    return
                line = base
                log(line + " uid=" + uid)
            else:
                log(line)
            words = line.split(" ")
            if words[0] == "assembly" and len(words) == 3:
                with open(args.reply_file) as f:
                    stamp = os.fstat(f.fileno()).st_mtime_ns
                    replies = [l.rstrip("\n") for l in f if l.strip()]
                with lock:
                    if served.get("stamp") != stamp:  # a new reply file starts over
                        served.update(stamp=stamp, assembly=0)
                    i = min(served["assembly"], len(replies) - 1)
                    served["assembly"] += 1
                reply = replies[i].replace("{jobid}", words[1]).replace("{node}", words[2])
                if reply == "!silent":
                    threading.Event().wait(60)
                    return
                if reply == "!close":
                    return
                conn.sendall(reply.encode() + b"\n")
            elif words[0] == "done" and len(words) == 4:
                conn.sendall(b"ok\n")
            else:
                conn.sendall(b"error unknown request\n")

    while True:
        conn, _ = srv.accept()
        threading.Thread(target=handle, args=(conn,), daemon=True).start()


if __name__ == "__main__":
    sys.exit(main())
