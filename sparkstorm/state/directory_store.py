"""State in a directory on any file system pyarrow opens: base and delta files per task.

Each task has a folder holding a full ``base-{txid}`` and the ``delta-{txid}`` files
after it; the marker is a ``COMMITTED-{txid}`` file. A base is rewritten only when the
deltas since the last one outweigh it, so a checkpoint costs what changed.

Every file is signed for its place: its path inside the store, which names the
topology, the task, the file's role and its txid. A file copied over another (a delta
over a later one, a task's over another's, another topology's) is refused, and so is a
marker copied to another txid.
"""

from __future__ import annotations

import contextlib
import json
import os
import pickle
import uuid
from collections.abc import Callable
from typing import Any
from urllib.parse import urlparse

from pyarrow.fs import FileSelector, FileSystem, LocalFileSystem

from sparkstorm.state.signing import OLDER_MAGIC, Signer, UnsignedState, older_state
from sparkstorm.state.stores import Changes, Sources, apply


class DirectoryStore:
    """State in a directory on any file system pyarrow opens: base and delta files per task.

    Every file is written under a temporary name and moved to a name nothing else uses,
    so a reader sees a whole file or none on a local disk and on HDFS, whose rename never
    replaces an existing file; the marker is a new ``COMMITTED-{txid}`` file each time.
    """

    durable = True

    def __init__(
        self,
        config: dict[str, Any],
        topology: str,
        filesystem: FileSystem | None = None,
        *,
        create: bool = True,
    ) -> None:
        path = config.get("path")
        if not path:
            msg = (
                "the 'directory' state provider needs a path: set "
                'topology.state.provider.config to {"path": "/some/dir"} (or a URI such as '
                '"hdfs://namenode:8020/some/dir")'
            )
            raise ValueError(msg)
        self.fs, root = (filesystem, str(path)) if filesystem else _open_filesystem(str(path))
        self.topology = topology
        self.root = f"{root.rstrip('/')}/{topology}"
        if create:  # a reader (``create=False``) leaves no folder behind for a wrong name
            self.fs.create_dir(self.root)
        self._sync = isinstance(self.fs, LocalFileSystem)
        self.signer = Signer.of(config)

    def _markers(self) -> dict[int, str]:
        return self._files(self.root, "COMMITTED")

    def _marker(self) -> dict[str, Any]:
        markers = self._markers()
        if not markers:
            return {"txid": -1, "sources": {}}
        path = markers[max(markers)]
        data = self._read(path)
        if data.startswith(b"{"):  # an earlier sparkstorm wrote it unsigned
            msg = f"the commit marker {path}"
            raise older_state(msg, self.topology)
        marker: dict[str, Any] = json.loads(self._verified(path, data))
        return marker

    def committed_txid(self) -> int:
        """The last committed checkpoint (-1 before the first)."""
        return int(self._marker()["txid"])

    def mark_committed(self, txid: int, sources: Sources | None = None) -> None:
        """Commit ``txid`` for the topology: a new marker file, with its sources."""
        marker = {"txid": txid, "sources": sources or {}}
        self._write_signed(f"{self.root}/COMMITTED-{txid}", json.dumps(marker).encode())
        for older, file in self._markers().items():
            if older < txid:
                self._delete(file)

    def committed_sources(self) -> Sources:
        """The sources recorded with the last commit."""
        sources: Sources = self._marker().get("sources", {})
        return sources

    def _dir(self, task: str) -> str:
        path = f"{self.root}/{task.replace(':', '/')}"
        self.fs.create_dir(path)
        return path

    def _files(self, path: str, kind: str) -> dict[int, str]:
        found = self.fs.get_file_info(FileSelector(path, allow_not_found=True))
        return {
            int(info.base_name.split("-")[1]): info.path
            for info in found
            if info.base_name.startswith(f"{kind}-") and not info.base_name.endswith("~")
        }

    def _sizes(self, files: list[str]) -> int:
        return sum(info.size or 0 for info in self.fs.get_file_info(files))

    def load(self, task: str) -> tuple[int, dict[Any, Any]]:
        """The task's committed (txid, data), rolled forward to the marker."""
        self._dir(task)
        return self.read(task)

    def tasks(self) -> list[str]:
        """The tasks with state here: the folders holding base or delta files."""
        selector = FileSelector(self.root, allow_not_found=True, recursive=True)
        found = set()
        for info in self.fs.get_file_info(selector):
            if info.base_name.startswith(("base-", "delta-")) and not info.base_name.endswith("~"):
                folder = info.path.rsplit("/", 1)[0]
                found.add(folder[len(self.root) + 1 :].replace("/", ":"))
        return sorted(found)

    def read(self, task: str) -> tuple[int, dict[Any, Any]]:
        """The task's committed (txid, data), rolled forward to the marker; writes nothing."""
        path, marker = f"{self.root}/{task.replace(':', '/')}", self.committed_txid()
        bases = self._files(path, "base")
        if max(bases, default=-1) > marker:  # a base is written only once its txid committed
            msg = (
                f"state file {bases[max(bases)]} is after the topology's commit marker "
                f"({marker}): the marker was put back to an earlier one, so it was not "
                "loaded (docs/security.md)"
            )
            raise UnsignedState(msg)
        txid = max(bases, default=-1)
        data: dict[Any, Any] = self._load(bases[txid]) if bases else {}
        for later, file in sorted(self._files(path, "delta").items()):
            if txid < later <= marker:
                apply(data, self._load(file))
                txid = later
        return txid, data

    def stage(self, task: str, txid: int, changes: Changes) -> None:
        """Keep ``changes`` under ``txid`` until the marker reaches it."""
        file = f"{self._dir(task)}/delta-{txid}"
        self._delete(file)  # what a crashed run staged under this id, above the marker
        self._write_signed(file, pickle.dumps(changes, protocol=5))

    def commit(
        self, task: str, txid: int, changes: Changes, data: Callable[[], dict[Any, Any]]
    ) -> None:
        """Nothing to fold (the marker decided); rewrite the base when deltas outweigh it."""
        path = self._dir(task)
        bases, deltas = self._files(path, "base"), self._files(path, "delta")
        newest = max(bases, default=-1)
        base = self._sizes([bases[newest]]) if bases else 0
        since = self._sizes([f for t, f in deltas.items() if t > newest])
        if since <= max(base, 1 << 20) or txid in bases:  # a base once written is never replaced
            return
        self._write_signed(f"{path}/base-{txid}", pickle.dumps(data(), protocol=5))
        for kind, files in (("base", bases), ("delta", deltas)):
            for older, file in files.items():
                if older < txid or (kind == "delta" and older == txid):
                    self._delete(file)

    def _load(self, path: str) -> Any:
        """A base or delta file's contents, once its signature for its place matched."""
        return pickle.loads(self._verified(path, self._read(path)))

    def _place(self, path: str) -> tuple[str]:
        """A file's place: its path inside the store, from the topology's folder on."""
        return (f"{self.topology}/{path[len(self.root) + 1 :]}",)

    def _verified(self, path: str, data: bytes) -> bytes:
        return self.signer.verify(data, f"state file {path}", self._place(path), self.topology)

    def _write_signed(self, path: str, payload: bytes) -> None:
        self._write(path, self.signer.sign(payload, self._place(path)))

    def resign(self) -> int:
        """Sign again, for this version, what an earlier sparkstorm wrote; how many files.

        Each file's earlier signature is checked with this secret first; a file already
        in this version's form is left as it is, so a resign cut short can run again.
        """
        selector = FileSelector(self.root, allow_not_found=True, recursive=True)
        done = 0
        for info in self.fs.get_file_info(selector):
            name = info.base_name
            if not name.startswith(("base-", "delta-", "COMMITTED-")) or name.endswith("~"):
                continue
            data = self._read(info.path)
            if name.startswith("COMMITTED-") and data.startswith(b"{"):
                payload = data
            elif data.startswith(OLDER_MAGIC):
                payload = self.signer.verify_older(data, f"state file {info.path}")
            else:
                continue
            self._delete(info.path)  # HDFS's rename never replaces a file
            self._write_signed(info.path, payload)
            done += 1
        return done

    def _read(self, path: str) -> bytes:
        with self.fs.open_input_stream(path) as stream:
            data: bytes = stream.read()
        return data

    def _write(self, path: str, data: bytes) -> None:
        """Write ``path`` whole or not at all: a temporary file, moved to a name not in use."""
        tmp = f"{path}.{uuid.uuid4().hex}~"
        try:
            with self.fs.open_output_stream(tmp) as stream:
                stream.write(data)
            if self._sync:  # survive a power cut too, not only a crashed process
                descriptor = os.open(tmp, os.O_RDONLY)
                try:
                    os.fsync(descriptor)
                finally:
                    os.close(descriptor)
            self.fs.move(tmp, path)
        except BaseException:
            self._delete(tmp)
            raise

    def _delete(self, path: str) -> None:
        with contextlib.suppress(FileNotFoundError):
            self.fs.delete_file(path)


def _open_filesystem(path: str) -> tuple[FileSystem, str]:
    """The file system and the path in it that ``path`` (a local path or a URI) names."""
    if not urlparse(path).scheme:
        return LocalFileSystem(), os.path.abspath(path)
    try:
        filesystem, inside = FileSystem.from_uri(path)
    except (OSError, ValueError) as error:  # pyarrow's ArrowInvalid is a ValueError
        reason = str(error).splitlines()[0]
        msg = (
            f"the 'directory' state provider cannot open {path!r}: {reason}. Use a local "
            "path, or a URI pyarrow.fs opens (file://, hdfs:// with libhdfs and the Hadoop "
            "CLASSPATH set, s3://, gs://, abfs://)"
        )
        raise ValueError(msg) from error
    return filesystem, str(inside)
