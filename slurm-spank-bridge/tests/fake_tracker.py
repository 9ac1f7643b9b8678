#!/usr/bin/env python3
"""A stand-in for idle-gpu-tracker that speaks the SPANK bridge's line protocol.

Listens on 127.0.0.1 (or a UNIX socket) only. Every request line is appended to --log. Replies:
  assembly <jobid> <node>  -> the lines of --reply-file, one per request in order,
                              the last one repeated (a rewritten file starts over); {jobid} and {node} are filled in.
                              "!silent" keeps the connection open without answering,
                              "!close" closes it without a reply.
  done <jobid> <node> <st> -> "ok"
  anything else            -> "error ..." (a malformed job, node or status, or an unknown request)
The words and limits come from ../contract (grammar.conf, limits.conf), as the tracker's do.
With --munge-socket every request must end in "munge=<credential>" whose payload is
the rest of the line; unmunge checks it, and the log line gets " uid=<uid>" appended.

--check TRANSCRIPTS replays the golden transcripts (../contract/transcripts.txt) instead of serving:
every request but status gets a reply of the same kind as the tracker's (an assembly request that
the tracker answers is answered with the transcript's reply as the reply file), word for word where
the fake models the reply (ok to done). Exit status 1 names each disagreement.
"""
import argparse
import os
import re
import socket
import subprocess
import sys
import threading

CONTRACT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "contract")


def read_contract():
    """NAME = VALUE of limits.conf and grammar.conf; numbers as int."""
    contract = {}
    for name in ("limits.conf", "grammar.conf"):
        with open(os.path.join(CONTRACT, name)) as f:
            for line in f:
                line = line.rstrip("\n")
                if line and not line.startswith("#"):
                    key, _, value = line.partition(" = ")
                    contract[key] = int(value, 0) if re.fullmatch(r"[0-9]+|0x[0-9a-fA-F]+", value) else value
    return contract


C = read_contract()
NODE = re.compile("[A-Za-z0-9" + re.escape(C["node_chars"]) + "]{1,%d}" % C["node_name_bytes"])
DECIMAL = re.compile("0|[1-9][0-9]{0,9}")


def problem(job, node, status=None):
    """Why the tracker refuses these fields, or None."""
    if not DECIMAL.fullmatch(job) or not 1 <= int(job) <= C["job_id_max"]:
        return "job must be a Slurm job id 1..%d, got '%s'" % (C["job_id_max"], job)
    if not NODE.fullmatch(node):
        return "node must be a Slurm node name, got '%s'" % node
    if status is not None and not (status == "-1" or (DECIMAL.fullmatch(status) and int(status) < 2**31)):
        return "status must be -1 or an exit status, got '%s'" % status
    return None


def answer(line, assembly_reply):
    """The reply to one request line (without credential); assembly_reply() gives the next --reply-file line."""
    words = line.split(" ")
    error = C["reply_error_word"] + " "
    if words[0] == C["request_assembly"] and len(words) == 3:
        why = problem(words[1], words[2])
        return error + why if why else assembly_reply(words[1], words[2])
    if words[0] == C["request_done"] and len(words) == 4:
        why = problem(words[1], words[2], words[3])
        return error + why if why else C["reply_ok_word"]
    return error + "unknown request"


def check(path):
    """Replays the transcripts against answer(); returns the number of disagreements."""
    failures = exchanges = 0
    request = None
    with open(path) as f:
        for number, line in enumerate(f, 1):
            line = line.rstrip("\n")
            if line.startswith("> "):
                request = line[2:]
                continue
            if not line.startswith("< ") or request is None:
                continue
            want, request_now, request = line[2:], request, None
            if request_now == C["request_status"]:
                continue
            got = answer(request_now, lambda job, node: want)
            exchanges += 1
            same_kind = got.split(" ")[0] == want.split(" ")[0]
            if not same_kind or (want == C["reply_ok_word"] and got != want):
                failures += 1
                print("%s:%d: '%s': the tracker answers '%s', the fake '%s'" % (path, number, request_now, want, got))
    print("fake tracker: %d transcript exchanges, %d disagreements" % (exchanges, failures))
    return failures if exchanges else 1


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port-file", help="listen on 127.0.0.1, write the chosen port here")
    ap.add_argument("--unix", help="listen on this UNIX socket instead")
    ap.add_argument("--reply-file")
    ap.add_argument("--log")
    ap.add_argument("--munge-socket", help="require MUNGE credentials, checked by unmunge")
    ap.add_argument("--check", metavar="TRANSCRIPTS", help="replay the golden transcripts and exit")
    args = ap.parse_args()
    if args.check:
        return 1 if check(args.check) else 0
    if not args.reply_file or not args.log:
        ap.error("--reply-file and --log are required to serve")

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
                while b"\n" not in data and len(data) <= C["request_line_bytes"]:
                    chunk = conn.recv(8192)
                    if not chunk:
                        break
                    data += chunk
            except OSError:
                return
            line = data.split(b"\n", 1)[0].decode("ascii", "replace")
            if args.munge_socket:
                base, sep, cred = line.rpartition(" " + C["credential_prefix"])
                uid = unmunge(cred, base) if sep else None
                if uid is None:
                    log("AUTH-FAIL " + line[:80])
                    conn.sendall(C["reply_error_word"].encode() + b" unauthenticated request\n")
                    return
                line = base
                log(line + " uid=" + uid)
            else:
                log(line)
            reply = answer(line, next_assembly_reply)
            if reply == "!silent":
                threading.Event().wait(60)
                return
            if reply == "!close":
                return
            conn.sendall(reply.encode() + b"\n")

    def next_assembly_reply(job, node):
        with open(args.reply_file) as f:
            stamp = os.fstat(f.fileno()).st_mtime_ns
            replies = [l.rstrip("\n") for l in f if l.strip()]
        with lock:
            if served.get("stamp") != stamp:  # a new reply file starts over
                served.update(stamp=stamp, assembly=0)
            i = min(served["assembly"], len(replies) - 1)
            served["assembly"] += 1
        return replies[i].replace("{jobid}", job).replace("{node}", node)

    while True:
        conn, _ = srv.accept()
        threading.Thread(target=handle, args=(conn,), daemon=True).start()


if __name__ == "__main__":
    sys.exit(main())
