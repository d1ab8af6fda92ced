"""schemathesis (PyPI) against the server's own /openapi.json: generated requests, valid and
invalid, for every operation; no response may be a 5xx and every response must match the
document. Skipped (77) where schemathesis is not installed."""
import os
import subprocess
import sys

from serve_harness import SKIP, Server, args


def main():
    quill, _ = args()
    st = os.path.join(os.path.dirname(sys.executable), "schemathesis")
    if not os.path.exists(st):
        print("schemathesis not installed (scripts/setup-python-serve.sh): skipped")
        sys.exit(SKIP)
    examples = os.environ.get("QUILL_SCHEMATHESIS_EXAMPLES", "25")
    with Server(quill, "--max-steps", "4", "--max-queue", "256") as s:
        cmd = [st, "run", s.url + "/openapi.json", "--checks", "not_a_server_error,status_code_conformance,"
               "content_type_conformance,response_schema_conformance", "--max-examples", examples,
               "--seed", "20261205", "--phases", "examples,fuzzing,stateful", "--request-timeout", "60", "--workers", "2"]
        print(" ".join(cmd), flush=True)
        r = subprocess.run(cmd, timeout=1200)
        code, err = s.terminate()
        assert code == 0, err
        sys.exit(r.returncode)


if __name__ == "__main__":
    main()
