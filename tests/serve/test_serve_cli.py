"""`quill serve` as a process: SIGTERM with lines queued and running exits 0 and ends every job
done or cancelled, each reported on its event stream (no job lost silently)."""
import json
import threading
import urllib.request

from serve_harness import Server, args


def last_event(url):
    with urllib.request.urlopen(url, timeout=120) as r:
        events = [line[7:].strip() for line in r.read().decode().splitlines() if line.startswith("event: ")]
    return events[-1] if events else None


def main():
    quill, _ = args()
    with Server(quill, "--max-batch", "2", "--batch-window-ms", "0", "--max-steps", "1000") as s:
        ids = []
        for i in range(6):
            status, _, body = s.request("POST", "/v1/jobs", {"text": f"rad nummer {i}", "steps": 300, "seed": i})
            assert status == 202, body
            ids.append(json.loads(body)["id"])
        results = {}
        threads = [threading.Thread(target=lambda i=i: results.__setitem__(i, last_event(f"{s.url}/v1/jobs/{i}/events")))
                   for i in ids]
        for t in threads:
            t.start()
        import time
        time.sleep(0.5)
        code, err = s.terminate()
        for t in threads:
            t.join(timeout=60)
        assert code == 0, (code, err)
        assert "SIGTERM" in err and "stopped" in err, err
        ends = [results.get(i) for i in ids]
        assert all(e in ("done", "cancelled") for e in ends), ends
        assert "cancelled" in ends, ends
        print("SIGTERM: exit 0; job ends:", ends)


if __name__ == "__main__":
    main()
