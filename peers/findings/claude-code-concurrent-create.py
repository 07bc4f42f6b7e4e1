"""Claude Code 2.1.332: two sessions that create the same new file at once both succeed,
and the first one's content is lost.

Claude Code's own Write runs through its agent loop (``claude -p``, stream-json) with
editspec's scripted model on loopback (no real model, no network; see
spec/peers/drivers/claude_code.py). Six sessions (six CLI processes, each started and ready
before the race) each Write "written by N" to new.txt at the same moment, for up to forty
rounds (a new file each round). Where a file exists and was not read, Write refuses ("File
has not been read yet"); a creator that finds no file writes it without an exclusive create.
Exit 1 when, in some round, more than one Write answered success (all but the last one's
content is gone), 0 when every round had exactly one.
"""

import sys
import tempfile
import threading
from pathlib import Path

from editspec.spec.peers.drivers import claude_code
from editspec.spec.peers.drivers._common import ToolRefused

SESSIONS, ROUNDS = 6, 40
base = Path(tempfile.mkdtemp())
root = base / "ws"
root.mkdir()
driver = claude_code.factory(root, base / "state")
several = None
try:
    sessions = [None] * SESSIONS
    openers = [
        threading.Thread(target=lambda i=i: sessions.__setitem__(i, driver.open_session(f"s{i}")))
        for i in range(SESSIONS)
    ]
    for thread in openers:
        thread.start()
    for thread in openers:
        thread.join()
    for number in range(ROUNDS):
        name = f"new-{number}.txt"
        answers = {}
        start = threading.Barrier(SESSIONS)

        def create(index, name=name, answers=answers, start=start):
            start.wait()
            try:
                sessions[index].write(name, f"written by {index}\n")
                answers[index] = "ok"
            except ToolRefused as refused:
                answers[index] = str(refused)[:60]

        workers = [threading.Thread(target=create, args=(i,)) for i in range(SESSIONS)]
        for thread in workers:
            thread.start()
        for thread in workers:
            thread.join()
        winners = sorted(index for index, answer in answers.items() if answer == "ok")
        print(f"round {number}: {len(winners)} of {SESSIONS} Writes answered success "
              f"({winners}); {name} holds {(root / name).read_bytes()!r}")  # fmt: skip
        if len(winners) > 1:
            print(f"the others: {sorted(set(answers.values()) - {'ok'})}")
            several = number
            break
finally:
    driver.close()
sys.exit(1 if several is not None else 0)
