"""A stdio server that answers like the small correct one (tests/hostile/_base.py) but writes
noise too: Usage: python noisy_answers.py [noise|echo]

`noise` (the default): NOISE_KB (default 256) KiB of non-JSON log lines before every answer.
`echo`: every answer to a request carries the whole request line back in its error data, so a
huge frame comes back as a huge answer. Both are what the harness must survive in bounded memory.
"""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "hostile"))

import _base  # noqa: E402

MODE = sys.argv[1] if len(sys.argv) > 1 else "noise"
NOISE = (b"log: this line is not JSON and it keeps coming " * 4 + b"\n") * (int(os.environ.get("NOISE_KB", "256")) * 1024 // 193)


def handle(line: bytes, n: int) -> None:
    out = _base.reply(line)
    if MODE == "noise":
        sys.stdout.buffer.write(NOISE)
    elif out is not None and "error" in out:
        out["error"]["data"] = {"echo": line.decode("utf-8", "replace")}
    if out is not None:
        _base.write(out)


if __name__ == "__main__":
    _base.serve(handle)
