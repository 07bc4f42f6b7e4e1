"""Recording a process with strace: writers in C and Node whose bytes are known.

Each writer runs under ``strace_record.record_command``; the trace it becomes is replayed
by the durability model over the image taken before it ran, and the model's disk (no power
cut) must equal the real disk byte for byte, modes included. A model fed inexact data
(a missed write, a wrong offset, a descriptor confused with another) could not match.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from editspec.fault_injection import strace_kill, trees
from editspec.fault_injection._durability import power_loss_states, simulate
from editspec.fault_injection.strace_record import StraceRecording, record_command

WRITER_C = r"""
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv) {
  if (chdir(argv[1]) != 0) return 2;
  mkdir("sub", 0750);
  int fd = open("sub/a.tmp", O_WRONLY | O_CREAT | O_TRUNC, 0640);
  static char block[10000];
  for (int i = 0; i < 10000; i++) block[i] = (char)(i * 7);
  write(fd, block, sizeof block);
  pwrite(fd, "\"q>\n\0x", 6, 3);                 /* at 3, the offset stays at 10000 */
  struct iovec parts[2] = {{"ab", 2}, {"\xff\x00\x01", 3}};
  writev(fd, parts, 2);                           /* at 10000 */
  lseek(fd, 100, SEEK_SET);
  write(fd, "Z", 1);                              /* at 100 */
  fsync(fd);
  ftruncate(fd, 9000);
  close(fd);
  rename("sub/a.tmp", "sub/a b>c.txt");
  int dir = open("sub", O_RDONLY | O_DIRECTORY);
  fsync(dir);
  close(dir);
  link("sub/a b>c.txt", "hard");
  unlink("hard");
  symlink("sub", "ln");
  umask(077);
  int log = open("ln/log", O_WRONLY | O_CREAT | O_APPEND, 0666);  /* through the link */
  write(log, "1", 1);
  dup2(log, 9);
  write(9, "2", 1);
  pid_t child = fork();
  if (child == 0) { write(log, "child", 5); _exit(0); }  /* its copy of the table */
  waitpid(child, NULL, 0);
  write(log, "3", 1);
  close(log);
  int other = open("other", O_WRONLY | O_CREAT | O_EXCL, 0644);  /* 9 still the log */
  write(other, "other", 5);
  write(9, "4", 1);
  mkdir("gone", 0755);
  rmdir("gone");
  chmod("other", 0604);
  return 0;
}
"""

WRITER_JS = r"""
const fs = require('fs');
const root = process.argv[2];
const big = Buffer.alloc(700000);
for (let i = 0; i < big.length; i++) big[i] = (i * 31) & 255;
fs.writeFileSync(root + '/a.tmp', big);                 // in 512 KiB writes or one
fs.mkdirSync(root + '/d/e', {recursive: true});
fs.appendFileSync(root + '/d/e/log', 'one\n');
fs.appendFileSync(root + '/d/e/log', 'two\n');
const fd = fs.openSync(root + '/b', 'w');
fs.writeSync(fd, 'hello');
fs.writeSync(fd, 'XY', 1);                              // pwrite at 1
fs.fsyncSync(fd);
fs.closeSync(fd);
fs.renameSync(root + '/a.tmp', root + '/a');
fs.chmodSync(root + '/a', 0o600);
fs.promises.writeFile(root + '/c', 'async, from the thread pool')
  .then(() => fs.promises.rename(root + '/c', root + '/d/c'))
  .then(() => fs.promises.unlink(root + '/b'));
"""


def needs_strace() -> None:
    reason = strace_kill.strace_unavailable()
    if reason is not None:
        pytest.skip(f"strace cannot trace processes here: {reason}")


def _model_tree(recording: StraceRecording, root: str) -> trees.Tree:
    return simulate(recording.image, recording.ops).volatile_state(len(recording.ops)).tree(root)


def _root(tmp_path: Path) -> str:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "kept.txt").write_bytes(b"there before\n")
    return os.path.realpath(root)


def test_a_c_writer_is_recorded_byte_for_byte(tmp_path: Path) -> None:
    needs_strace()
    if shutil.which("gcc") is None:
        pytest.skip("gcc is not installed (apt-get install gcc)")
    source = tmp_path / "writer.c"
    source.write_text(WRITER_C)
    binary = tmp_path / "writer"
    subprocess.run(["gcc", "-O0", "-o", str(binary), str(source)], check=True)
    root = _root(tmp_path)

    recording, done = record_command([str(binary), root], [root], cwd=tmp_path)

    assert done.returncode == 0, done.stderr
    assert recording.unmodeled == [] and recording.notes == []
    disk = trees.capture(root)
    assert trees.equal(_model_tree(recording, root), disk), trees.diff(
        _model_tree(recording, root), disk
    )
    data = bytearray(bytes((i * 7) & 255 for i in range(10000)))
    data[3:9] = b'"q>\n\0x'
    data[100:101] = b"Z"
    assert disk["sub/a b>c.txt"] == trees.Entry.file(bytes(data[:9000]), 0o640)
    assert disk["sub/log"] == trees.Entry.file(b"12child34", 0o600)  # umask 077
    assert disk["other"] == trees.Entry.file(b"other", 0o604)
    names = [(op.name, [os.path.relpath(p, root) for p in op.paths]) for op in recording.ops]
    assert ("fsync_dir", ["sub"]) in names  # an fsync of a directory descriptor
    assert ("rename", ["sub/a.tmp", "sub/a b>c.txt"]) in names
    assert ("open", ["sub/log"]) in names  # the path the symlink led to
    writes = [op for op in recording.ops if op.name == "write"]
    assert [op.offset for op in writes[:4]] == [0, 3, 10000, 100]
    # Nothing outside the root: the loader's reads, the libc it maps, are not traced.
    assert all(p.startswith(root + os.sep) for op in recording.ops for p in op.paths)
    # The data fsynced before the truncate survives a power cut right after it; the
    # directory was fsynced after the rename, so no state lacks the new name.
    states, bounded = power_loss_states(recording.image, recording.ops)
    assert not bounded and len(states) > 10
    fsync_dir = next(op.position for op in recording.ops if op.name == "fsync_dir")
    after = [s for s in states if s.point > fsync_dir]
    assert after and all(os.path.join(root, "sub", "a b>c.txt") in s.entries for s in after)


def test_a_node_writer_is_recorded_byte_for_byte_across_its_threads(tmp_path: Path) -> None:
    needs_strace()
    if shutil.which("node") is None:
        pytest.skip("node is not installed")
    script = tmp_path / "writer.js"
    script.write_text(WRITER_JS)
    root = _root(tmp_path)

    recording, done = record_command(["node", str(script), root], [root], cwd=tmp_path)

    assert done.returncode == 0, done.stderr
    assert recording.unmodeled == []
    disk = trees.capture(root)
    model = _model_tree(recording, root)
    assert trees.equal(model, disk), trees.diff(model, disk)
    assert disk["a"] == trees.Entry.file(bytes((i * 31) & 255 for i in range(700000)), 0o600)
    assert disk["d/c"].data == b"async, from the thread pool"
    assert disk["d/e/log"].data == b"one\ntwo\n"
    assert "b" not in disk
    tids = {call.tid for call, _ in recording.calls}
    assert len(tids) > 1, "the promise calls run on libuv's pool threads"


# -- the log, line by line -------------------------------------------------------------------


def _hex(text: str) -> str:
    return "".join(f"\\x{b:02x}" for b in text.encode())


def _recording(tmp_path: Path) -> tuple[StraceRecording, str]:
    root = os.path.realpath(tmp_path)
    recording = StraceRecording([root])
    recording.start()
    return recording, root


def test_calls_split_by_threads_are_joined_and_unfinished_ones_dropped(tmp_path: Path) -> None:
    recording, root = _recording(tmp_path)
    path = _hex(f"{root}/f")
    recording.load(
        f'10 openat(AT_FDCWD<{_hex(root)}>, "{path}", O_WRONLY|O_CREAT, 0644 <unfinished ...>\n'
        f'11 write(1<pipe:[5]>, "{_hex("{}")}", 2) = 2\n'
        f"10 <... openat resumed>) = 3<{path}>\n"
        f'11 write(3<{path}>, "{_hex("abc")}", 3 <unfinished ...>\n'
        f"10 +++ killed by SIGKILL +++\n"
        f"11 <... write resumed>) = 3\n"
        f'12 write(3<{path}>, "{_hex("never")}", 5 <unfinished ...>\n',
        pid=10,
        cwd=root,
    )
    assert [(op.name, op.data) for op in recording.ops] == [("open", b""), ("write", b"abc")]


def test_what_the_model_cannot_replay_is_listed(tmp_path: Path) -> None:
    recording, root = _recording(tmp_path)
    path = _hex(f"{root}/f")
    recording.load(
        f'10 openat(AT_FDCWD<{_hex(root)}>, "{path}", O_RDWR|O_CREAT, 0644) = 3<{path}>\n'
        f'10 write(3<{path}>, "{_hex("abc")}"..., 300) = 300\n'
        "10 io_uring_setup(8, {flags=0}) = 4<anon_inode:[io_uring]>\n"
        f"10 mmap(NULL, 4096, PROT_READ|PROT_WRITE, MAP_SHARED, 3<{path}>, 0) = 0x7f00\n"
        f'10 write(7<{_hex(root + "/old")}>, "{_hex("x")}", 1) = 1\n'
        f"10 sync_file_range(3<{path}>, 0, 0, SYNC_FILE_RANGE_WRITE) = 0\n",
        pid=10,
        cwd=root,
    )
    problems = "\n".join(recording.unmodeled)
    assert "longer than strace's -s" in problems
    assert "io_uring is unsupported" in problems
    assert "shared writable mmap" in problems
    assert "opened before tracing started" in problems
    assert recording.notes and "not a durability point" in recording.notes[0]


def test_a_forked_child_copies_the_table_and_a_thread_shares_it(tmp_path: Path) -> None:
    recording, root = _recording(tmp_path)
    one, two = _hex(f"{root}/one"), _hex(f"{root}/two")
    cwd = _hex(root)
    recording.load(
        f'10 openat(AT_FDCWD<{cwd}>, "{one}", O_WRONLY|O_CREAT, 0644) = 3<{one}>\n'
        "10 clone(child_stack=NULL, flags=CLONE_CHILD_SETTID|SIGCHLD) = 20\n"
        "10 clone(child_stack=0x1, flags=CLONE_VM|CLONE_FS|CLONE_FILES|CLONE_THREAD) = 30\n"
        "20 close(3<...>) = 0\n"  # the child's copy only
        f'20 openat(AT_FDCWD<{cwd}>, "{two}", O_WRONLY|O_CREAT, 0644) = 3<{two}>\n'
        f'20 write(3<{two}>, "{_hex("child")}", 5) = 5\n'
        f'30 write(3<{one}>, "{_hex("thread")}", 6) = 6\n'
        f'10 write(3<{one}>, "{_hex("!")}", 1) = 1\n',
        pid=10,
        cwd=root,
    )
    tree = _model_tree(recording, root)
    assert tree["one"].data == b"thread!" and tree["two"].data == b"child"
