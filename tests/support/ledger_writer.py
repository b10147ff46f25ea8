"""A ledger writer process for the crash and concurrency tests (``python -m`` from the repo root).

``loop ROOT SESSION ACKS SEED``
    Append receipt batches to SESSION through the real kernel (``WorkflowKernel.apply_outcome``)
    forever. After each append returns, one line ``FIRST LAST HEAD`` is written to the ACKS file
    with a single unbuffered ``write``: a line there is an acknowledged append. Batch sizes vary
    (1 to 40 events, up to ~30 KiB) so a kill can land in any phase, mid-``write`` included.

``zygote ROOT``
    A warm process that forks writers on request, so hundreds of SIGKILLs stay cheap. For each
    line ``SESSION ACKS SEED`` on stdin it forks a child running ``loop``, prints the child's
    pid, waits for it and prints its wait status. Each child is a real, separate process.

``race ROOT SESSION WRITER COUNT GO``
    Print ``ready``, wait until the file GO exists, then append COUNT batches of 3 receipts
    (subjects ``WRITER-N-I``), re-reading and retrying whenever the kernel raises
    ``ConflictError``. Prints ``{"batches": [[first, last], ...], "conflicts": N}`` as JSON.
    Any other error ends the process with a traceback and exit 1.
"""

from __future__ import annotations

import json
import os
import random
import sys
import time
from pathlib import Path

from kernel.errors import ConflictError
from tests.support.kernel_env import make_kernel, receipt_outcome

BATCH_SIZES = (1, 1, 1, 1, 2, 3, 8, 40)


def append_loop(root: Path, session: str, acks: Path, seed: int) -> None:
    rng = random.Random(seed)
    kernel = make_kernel(root, seed=seed)
    ack = os.open(acks, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    batch = 0
    while True:
        size = rng.choice(BATCH_SIZES)
        subjects = [f"w{seed}-b{batch}-{i}of{size}" for i in range(size)]
        applied = kernel.apply_outcome(
            session,
            "disambiguation",
            receipt_outcome(*subjects, returned=rng.choice((1, 2, 30))),
            actor="agent",
        )
        first, last = applied.events[0].seq, applied.events[-1].seq
        os.write(ack, f"{first} {last} {applied.head}\n".encode())
        batch += 1


def zygote(root: Path) -> None:
    for line in sys.stdin:
        session, acks, seed = line.split()
        pid = os.fork()
        if pid == 0:  # the writer: never returns into the zygote's loop
            code = 0
            try:
                append_loop(root, session, Path(acks), int(seed))
            except BaseException:
                import traceback

                traceback.print_exc()
                code = 1
            finally:
                os._exit(code)
        sys.stdout.write(f"{pid}\n")
        sys.stdout.flush()
        _, status = os.waitpid(pid, 0)
        sys.stdout.write(f"{status}\n")
        sys.stdout.flush()


def race(root: Path, session: str, writer: str, count: int, go: Path) -> None:
    kernel = make_kernel(root, seed=abs(hash(writer)) % 1000)
    sys.stdout.write("ready\n")
    sys.stdout.flush()
    while not go.exists():
        time.sleep(0.001)
    batches: list[list[int]] = []
    conflicts = 0
    n = 0
    while n < count:
        subjects = [f"{writer}-{n}-{i}" for i in range(3)]
        try:
            applied = kernel.apply_outcome(
                session, "disambiguation", receipt_outcome(*subjects), actor="agent"
            )
        except ConflictError:
            conflicts += 1
            continue
        batches.append([applied.events[0].seq, applied.events[-1].seq])
        n += 1
    sys.stdout.write(json.dumps({"batches": batches, "conflicts": conflicts}) + "\n")


def main(argv: list[str]) -> None:
    mode, *args = argv
    if mode == "loop":
        append_loop(Path(args[0]), args[1], Path(args[2]), int(args[3]))
    elif mode == "zygote":
        zygote(Path(args[0]))
    elif mode == "race":
        race(Path(args[0]), args[1], args[2], int(args[3]), Path(args[4]))
    else:
        raise SystemExit(f"unknown mode {mode!r}")


if __name__ == "__main__":
    main(sys.argv[1:])
