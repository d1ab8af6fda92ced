"""Starts `quill serve` on a free loopback port for the Python service tests and stops it.

Standard library only, so the CLI test runs wherever python3 does; the schemathesis and browser
tests add their PyPI packages (tools/requirements-serve.txt) and skip (exit 77) without them.
"""
import json
import os
import re
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request

SKIP = 77


class Server:
    def __init__(self, quill, *args, model=None):
        cmd = [quill, "serve", "--port", "0", "--threads", "1", *args]
        if model:
            cmd += ["--model", model]
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline()
        m = re.search(r"listening on (http://[^/]+)/", line)
        if not m:
            err = self.proc.stderr.read()
            raise RuntimeError(f"quill serve did not start: {line!r} {err!r}")
        self.url = m.group(1)
        deadline = time.time() + 60
        while time.time() < deadline:
            try:
                with urllib.request.urlopen(self.url + "/readyz", timeout=5) as r:
                    if r.status == 200:
                        return
            except urllib.error.HTTPError:
                pass
            time.sleep(0.1)
        raise RuntimeError("quill serve never became ready")

    def request(self, method, path, body=None, headers=None, timeout=120):
        data = json.dumps(body).encode() if body is not None else None
        h = {"Content-Type": "application/json"} if data is not None else {}
        h.update(headers or {})
        req = urllib.request.Request(self.url + path, data=data, method=method, headers=h)
        try:
            with urllib.request.urlopen(req, timeout=timeout) as r:
                return r.status, r.headers, r.read()
        except urllib.error.HTTPError as e:
            return e.code, e.headers, e.read()

    def terminate(self, timeout=60):
        """SIGTERM, then the exit code and stderr."""
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise
        return self.proc.returncode, self.proc.stderr.read()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


def args():
    """quill binary and the source dir from argv (CTest passes them)."""
    if len(sys.argv) < 3:
        print(f"usage: {sys.argv[0]} QUILL_BINARY SOURCE_DIR", file=sys.stderr)
        sys.exit(2)
    return sys.argv[1], sys.argv[2]
