"""The operator verbs (list, kill, rebalance, activate, deactivate), DRPC and ``state``.

Each asks a running topology's REST API on this machine, found in the registry.
"""

from __future__ import annotations

import argparse
import json
import sys
import urllib.error
import urllib.parse
import urllib.request
from typing import TYPE_CHECKING, Any

from sparkstorm.errors import InvalidTopologyError, SparkStormError
from sparkstorm.topology.builder import Topology

if TYPE_CHECKING:
    pass

from sparkstorm.cli.exits import EXIT_FAILED, EXIT_OK, EXIT_USAGE, UsageError
from sparkstorm.cli.loading import resolve_target
from sparkstorm.cli.options import parse_conf


def control(args: argparse.Namespace) -> int:
    """``list``, ``kill``, ``rebalance``, ``activate``, ``deactivate``: through the driver's API."""
    from sparkstorm.control import registry

    if args.command == "list":
        entries = registry.running()
        if not entries:
            print("no topologies running")
            return EXIT_OK
        print(f"{'name':24} {'status':9} {'engine':7} {'uptime':>12}  api")
        for name, entry in entries.items():
            try:
                summary = _call(entry, "GET", f"/api/v1/topology/{name}")
            except OSError as exc:
                print(f"{name:24} {'?':9} {'?':7} {'?':>12}  {entry['url']} ({exc})")
                continue
            print(
                f"{name:24} {summary['status']:9} {summary['engine']:7} "
                f"{summary['uptime']:>12}  {entry['url']}"
            )
        return EXIT_OK
    try:
        entry = registry.lookup(args.name)
        path = f"/api/v1/topology/{args.name}/{args.command}"
        body = None
        if args.command in ("kill", "rebalance"):
            path += f"/{args.wait:g}"
        if args.command == "rebalance":
            body = {"rebalanceOptions": _rebalance_options(args)}
        _call(entry, "POST", path, body)
    except (registry.NotRunning, UsageError) as exc:
        print(f"sparkstorm: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except Refused as exc:
        print(f"sparkstorm: error: {args.name} refused: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except OSError as exc:
        print(
            f"sparkstorm: error: {args.name} did not answer at {entry['url']}: {exc}",
            file=sys.stderr,
        )
        return EXIT_FAILED
    if args.command == "kill":
        print(f"{args.name}: stopping (draining for up to {args.wait:g}s)")
    elif args.command == "rebalance":
        over = f"{args.workers} workers" if args.workers else "as many workers"
        kept = "".join(f", {e.replace('=', ' in ')} of them" for e in args.executors or [])
        print(f"{args.name}: rebalancing over {over}{kept} (draining for up to {args.wait:g}s)")
    else:
        print(f"{args.name}: {args.command}d")
    return EXIT_OK


def _rebalance_options(args: argparse.Namespace) -> dict[str, Any]:
    """Storm's ``rebalanceOptions``: ``numWorkers`` and ``executors`` as asked."""
    options: dict[str, Any] = {}
    if args.workers is not None:
        options["numWorkers"] = args.workers
    for given in args.executors or []:
        component, equals, count = given.partition("=")
        if not equals or not count.strip().isdigit():
            msg = f"-e {given}: give COMPONENT=N, N a whole number (Storm's -e split=2)"
            raise UsageError(msg)
        options.setdefault("executors", {})[component.strip()] = int(count)
    return options


def call_drpc(args: argparse.Namespace) -> int:
    """``drpc``: one DRPC call through the running driver's API; its JSON on stdout."""
    from sparkstorm.control import registry

    path = f"/api/v1/topology/{args.name}/drpc/{urllib.parse.quote(args.function, safe='')}"
    wait = 600.0  # the driver answers within its own timeout first
    if args.timeout is not None:
        path += f"?timeout={args.timeout:g}"
        wait = args.timeout + 10
    try:
        entry = registry.lookup(args.name)
        answer = _call(entry, "POST", path, args.args.encode(), timeout=wait)
    except registry.NotRunning as exc:
        print(f"sparkstorm: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except Refused as exc:
        print(f"sparkstorm: error: {exc}", file=sys.stderr)
        return EXIT_USAGE if exc.code in (400, 401, 404) else EXIT_FAILED
    except OSError as exc:
        print(f"sparkstorm: error: {args.name} did not answer: {exc}", file=sys.stderr)
        return EXIT_FAILED
    print(json.dumps(answer))
    return EXIT_OK


def show_state(args: argparse.Namespace) -> int:
    """``state``: the committed state of a topology, read from its state provider."""
    from sparkstorm.state import read_committed_state
    from sparkstorm.trident.reading import persisted_states

    if args.reset:
        return reset_progress(args.name)
    try:
        topology, conf = resolve_target(args.target)[:2] if args.target else (None, {})
        conf.update(parse_conf(args.conf))
        if args.resign:
            return resign_state(args.name, conf)
        if topology is not None and persisted_states(topology):
            return show_trident_state(args, topology, conf)
        state = read_committed_state(args.name, conf)
    except (UsageError, InvalidTopologyError, ValueError) as exc:
        print(f"sparkstorm: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except SparkStormError as exc:
        print(f"sparkstorm: error: {exc}", file=sys.stderr)
        return EXIT_FAILED
    components = [args.component] if args.component else state.components
    if args.json:
        for component, task, key, value in state.items():
            if component in components:
                row = {"component": component, "task": task, "key": key, "value": value}
                print(json.dumps(row, default=repr))
        return EXIT_OK
    where = f" at {state.where}" if state.where else ""
    if state.txid < 0:
        print(f"{args.name}: no checkpoint committed in the {state.provider} provider{where}")
        return EXIT_OK
    print(f"{args.name}: checkpoint {state.txid}, in the {state.provider} provider{where}")
    for component in components:
        tasks = [t for t in state.tasks if t.component == component and not t.windows]
        pairs = sorted(
            ((k, v) for t in tasks for k, v in t.data.items()), key=lambda kv: repr(kv[0])
        )
        print(f"\n{component}: {len(pairs):,} keys in {len(tasks)} task(s)")
        for key, value in pairs[: args.limit or None]:
            print(f"  {key!r}: {value!r}")
        if args.limit and len(pairs) > args.limit:
            print(f"  ... {len(pairs) - args.limit:,} more (--limit 0 shows all, --json reads)")
    return EXIT_OK


def reset_progress(name: str) -> int:
    """``state NAME --reset``: delete the Trident progress the driver keeps for ``name``.

    That is where a topology of a user's own states keeps it (``~/.sparkstorm/trident``);
    progress kept beside a state (Redis, PostgreSQL, Kafka) or in a named provider lives
    and dies with that state, and is not touched here.
    """
    from sparkstorm.control import registry
    from sparkstorm.control.run_memory import DURABLE, durable_file

    if name in registry.running():
        print(f"sparkstorm: error: {name} is running: kill it first", file=sys.stderr)
        return EXIT_USAGE
    path = durable_file(f"{DURABLE}{name}")
    try:
        path.unlink()
    except FileNotFoundError:
        print(f"{name}: no Trident progress kept by the driver on this machine ({path})")
        return EXIT_OK
    print(f"{name}: Trident progress at {path} deleted: its next run starts at txid 1")
    return EXIT_OK


def resign_state(name: str, conf: dict[str, Any]) -> int:
    """``state NAME --resign``: sign again what an earlier sparkstorm wrote for ``name``."""
    from sparkstorm.control import registry
    from sparkstorm.state.committed import reading

    if name in registry.running():
        print(f"sparkstorm: error: {name} is running: kill it first", file=sys.stderr)
        return EXIT_USAGE
    with reading(name, conf) as (store, provider, where):
        done = store.resign()  # type: ignore[attr-defined]
    shown = f" at {where}" if where else ""
    print(f"{name}: {done} task(s) or file(s) signed again in the {provider} provider{shown}")
    return EXIT_OK


def show_trident_state(args: argparse.Namespace, topology: Topology, conf: dict[str, Any]) -> int:
    """``state --from`` a Trident topology: its maps as committed, and its last txid."""
    from sparkstorm.trident.reading import read_trident_state

    try:
        state = read_trident_state(topology, conf, args.name)
    except Exception as exc:  # a store that cannot be reached, say
        print(f"sparkstorm: error: {args.name}'s Trident state: {exc}", file=sys.stderr)
        return EXIT_FAILED
    shown = [m for m in state.maps if args.component in (None, m.name)]
    if args.json:
        for m in shown:
            for key, value in m.items:
                print(json.dumps({"state": m.name, "key": key, "value": value}, default=repr))
        return EXIT_OK
    if state.txid > 0:
        print(f"{args.name}: Trident batch {state.txid} committed last")
    elif state.progress_provider == "memory":
        print(
            f"{args.name}: its progress is kept in a run's memory, which is gone once the "
            "run ends: nothing committed can be read from here (query it with DRPC while "
            "it runs)"
        )
    else:
        print(f"{args.name}: no Trident batch committed yet ({state.progress_where})")
    for m in shown:
        if m.unreadable is not None:
            print(f"\n{m.name} ({m.where}): {m.unreadable}")
            continue
        print(f"\n{m.name} ({m.where}): {len(m.items):,} keys")
        for key, value in m.items[: args.limit or None]:
            print(f"  {key!r}: {value!r}")
        if args.limit and len(m.items) > args.limit:
            print(f"  ... {len(m.items) - args.limit:,} more (--limit 0 shows all, --json reads)")
    return EXIT_OK


def _call(
    entry: dict[str, Any], method: str, path: str, body: Any = None, *, timeout: float = 10
) -> Any:
    """One request to a running driver's API, with its control token; the JSON answer.

    ``body`` goes as JSON, or as it is if it is bytes (a DRPC call's arguments).
    """
    raw = isinstance(body, bytes)
    request = urllib.request.Request(
        entry["url"] + path,
        data=body if raw or body is None else json.dumps(body).encode(),
        method=method,
        headers={
            "Authorization": f"Bearer {entry['token']}",
            "Content-Type": "application/octet-stream" if raw else "application/json",
        },
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return json.load(response)
    except urllib.error.HTTPError as exc:
        message = json.loads(exc.read() or b"{}").get("error", exc.reason)
        text = f"HTTP {exc.code}: {message}"
        raise Refused(text, exc.code) from None


class Refused(OSError):
    """The running driver answered, and refused the request (an HTTP error)."""

    def __init__(self, message: str, code: int) -> None:
        super().__init__(message)
        self.code = code
