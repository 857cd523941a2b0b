#!/usr/bin/env python3
"""Wait until an OpenAI-compatible server lists a model at /v1/models; exit 0 then, 1 on giving up.

Written by `postmortem runbook`. Unlike a `curl … | grep id` loop every 15 s it reads the JSON,
checks the model id (not any id: a half-started server, another server on the port), backs off
from 1 s to 15 s, and gives up after --give-up seconds (the longest load measured, plus a margin),
so systemd's TimeoutStartSec= and this wait agree. Python 3.6+ standard library only.
"""

import argparse
import json
import sys
import time
import urllib.error
import urllib.request


def listed(url, model, timeout):
    try:
        with urllib.request.urlopen(url + "/v1/models", timeout=timeout) as resp:
            if resp.status != 200:
                return False
            body = json.loads(resp.read(1 << 20).decode("utf-8", "replace"))
    except (OSError, ValueError, urllib.error.URLError):
        return False
    ids = [m.get("id") for m in body.get("data", []) if isinstance(m, dict)] if isinstance(body, dict) else []
    return model in ids if model else bool(ids)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--url", default="http://127.0.0.1:8000", help="the server's base URL")
    p.add_argument("--model", default="", help="the model id /v1/models must list (empty: any)")
    p.add_argument("--give-up", type=float, default=900.0, help="seconds before giving up")
    a = p.parse_args()
    start, delay = time.monotonic(), 1.0
    while True:
        if listed(a.url.rstrip("/"), a.model, timeout=5.0):
            print("ready after %.0f s" % (time.monotonic() - start))
            return 0
        waited = time.monotonic() - start
        if waited >= a.give_up:
            print("not ready after %.0f s: giving up" % waited, file=sys.stderr)
            return 1
        time.sleep(min(delay, max(0.0, a.give_up - waited)))
        delay = min(delay * 2, 15.0)


if __name__ == "__main__":
    sys.exit(main())
