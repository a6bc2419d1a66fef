"""A loopback imitation of the Hugging Face Hub's file API, for tests/install/pull_test.sh (no
real download is possible in CI). Serves the repositories under ROOT (ROOT/ORG/NAME/files):

  GET /api/models/ORG/NAME/revision/REV?blobs=true   model info: sha (the commit), siblings with
      rfilename, size, blobId (git blob sha1) and, for LFS files (*.safetensors, *.gguf, *.bin),
      lfs {sha256, size, pointerSize}, as the Hub answers
  GET /ORG/NAME/resolve/REV/FILE   the file; LFS files answer 302 to /cdn/<sha256>, as the Hub
      redirects to its CDN
  GET /cdn/<sha256>                the LFS file

Range requests (bytes=N-) get 206. Faults, each for one file name:
  --drop FILE     the first GET of FILE sends half the bytes, then closes the connection
  --stall FILE    the first GET of FILE sends half the bytes, then waits (the test kills the client)
  --corrupt FILE  every GET of FILE has one byte changed
Writes the port to PORTFILE and one line per request to LOG: "GET <path> range=<Range or ->".
Files are hashed once and streamed from disk in pieces, so the manual 2 GB run
(RINGLM_PULL_MB=2000) needs no more memory than the 20 MB one."""
import argparse
import hashlib
import json
import os
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

COMMIT = "0123456789abcdef0123456789abcdef01234567"
LFS_SUFFIXES = (".safetensors", ".gguf", ".bin")

ap = argparse.ArgumentParser()
ap.add_argument("root")
ap.add_argument("portfile")
ap.add_argument("log")
ap.add_argument("--drop", default="")
ap.add_argument("--stall", default="")
ap.add_argument("--corrupt", default="")
args = ap.parse_args()

lock = threading.Lock()
faulted = set()  # files whose one-time fault happened


CHUNK = 1 << 20
digests = {}  # (path, size, mtime) -> (git sha1, sha256)


def hashes(full):
    st = os.stat(full)
    key = (full, st.st_size, st.st_mtime_ns)
    with lock:
        if key in digests:
            return digests[key]
    g, h = hashlib.sha1(b"blob %d\0" % st.st_size), hashlib.sha256()
    with open(full, "rb") as f:
        while piece := f.read(CHUNK):
            g.update(piece)
            h.update(piece)
    with lock:
        digests[key] = (g.hexdigest(), h.hexdigest())
    return digests[key]


def files_of(repo):
    base = os.path.join(args.root, repo)
    out = []
    for dirpath, _, names in os.walk(base):
        for n in sorted(names):
            full = os.path.join(dirpath, n)
            out.append((os.path.relpath(full, base), full))
    return sorted(out)


def by_sha256(sha):
    for org in os.listdir(args.root):
        for name in os.listdir(os.path.join(args.root, org)):
            for rel, full in files_of(f"{org}/{name}"):
                if rel.endswith(LFS_SUFFIXES) and hashes(full)[1] == sha:
                    return rel, full
    return None, None


class Hub(BaseHTTPRequestHandler):
    def log_message(self, *a):
        pass

    def do_GET(self):
        with open(args.log, "a") as log:
            log.write(f"GET {self.path} range={self.headers.get('Range', '-')}\n")
        path = self.path.split("?")[0]
        parts = path.strip("/").split("/")
        if parts[:2] == ["api", "models"] and len(parts) >= 6 and parts[4] == "revision":
            return self.model_info(f"{parts[2]}/{parts[3]}")
        if parts[0] == "cdn" and len(parts) == 2:
            rel, full = by_sha256(parts[1])
            return self.send_file(rel, full) if full else self.send_error(404)
        if len(parts) >= 5 and parts[2] == "resolve":
            repo, rel = f"{parts[0]}/{parts[1]}", "/".join(parts[4:])
            full = os.path.join(args.root, repo, rel)
            if not os.path.isfile(full):
                return self.send_error(404)
            if rel.endswith(LFS_SUFFIXES):
                self.send_response(302)
                self.send_header("Location", "/cdn/" + hashes(full)[1])
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            return self.send_file(rel, full)
        self.send_error(404)

    def model_info(self, repo):
        if not os.path.isdir(os.path.join(args.root, repo)):
            return self.send_error(404)
        siblings = []
        for rel, full in files_of(repo):
            size = os.path.getsize(full)
            sha1, sha256 = hashes(full)
            s = {"rfilename": rel, "size": size, "blobId": sha1}
            if rel.endswith(LFS_SUFFIXES):
                s["lfs"] = {"sha256": sha256, "size": size, "pointerSize": 134}
            siblings.append(s)
        body = json.dumps({"id": repo, "sha": COMMIT, "siblings": siblings}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def send_file(self, rel, full):
        size = os.path.getsize(full)
        flip = size // 3 if rel == args.corrupt else -1  # the one byte --corrupt changes
        start = 0
        rng = self.headers.get("Range")
        if rng and rng.startswith("bytes=") and rng.endswith("-"):
            start = int(rng[6:-1])
            if start >= size:
                self.send_response(416)
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
        self.send_response(206 if start else 200)
        if start:
            self.send_header("Content-Range", f"bytes {start}-{size - 1}/{size}")
        self.send_header("Content-Length", str(size - start))
        self.send_header("Accept-Ranges", "bytes")
        self.end_headers()
        fault = None
        with lock:
            if rel in (args.drop, args.stall) and rel not in faulted:
                faulted.add(rel)
                fault = "drop" if rel == args.drop else "stall"
        end = size // 2 if fault else size  # a fault stops at the file's half
        with open(full, "rb") as f:
            f.seek(start)
            pos = start
            while pos < end:
                piece = bytearray(f.read(min(CHUNK, end - pos)))
                if pos <= flip < pos + len(piece):
                    piece[flip - pos] ^= 0x55
                self.wfile.write(piece)
                pos += len(piece)
        if fault:
            self.wfile.flush()
            if fault == "stall":
                time.sleep(3600)
            self.close_connection = True
            self.connection.shutdown(2)


server = ThreadingHTTPServer(("127.0.0.1", 0), Hub)
server.daemon_threads = True
with open(args.portfile + ".tmp", "w") as f:
    f.write(str(server.server_address[1]))
os.rename(args.portfile + ".tmp", args.portfile)
server.serve_forever()
