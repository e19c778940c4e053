"""The sparkstorm command: exit codes, statistics, Ctrl-C, and messages a newcomer can act on."""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
TOPOLOGIES = str(ROOT / "tests" / "cli_topologies.py")


def sparkstorm(
    *args: str, timeout: float = 300, columns: str = "120"
) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": columns}
    return subprocess.run(
        [sys.executable, "-m", "sparkstorm.cli", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def test_runs_an_example_and_writes_stats_json(tmp_path):
    stats = tmp_path / "stats.json"
    proc = sparkstorm(
        "run",
        "examples/exclamation.py",
        "--engine",
        "local",
        "--stats-json",
        str(stats),
        "--conf",
        "topology.acker.executors=2",
        "--conf",
        "sparkstorm.capture.max.values=400",
    )
    assert proc.returncode == 0, proc.stderr
    assert "words acked: 1,000  failed: 0" in proc.stdout
    # the example captures exclaim2's 1,000 emits: the driver keeps the latest 400
    said = "captured exclaim2/default: the oldest 600 values were dropped to keep the latest"
    assert said in proc.stdout + proc.stderr
    data = json.loads(stats.read_text())
    assert data["components"]["word"]["acked"] == 1000
    assert data["components"]["__acker"]["tasks"] == 2  # --conf parsed as JSON
    assert data["components"]["exclaim1"]["executed"] == 1000
    assert data["profile_secs"]["execute"] > 0 and data["profile_secs"]["spout"] > 0


def test_main_command_runs_on_spark_with_its_ui_on_loopback_and_no_superstep_warnings():
    """The README's first command; its Spark UI listens on loopback only, as sparkstorm's
    own page does (Spark binds to every interface unless told)."""
    proc = start("examples/exclamation.py")
    assert proc.stdout is not None and proc.stderr is not None
    lines = []
    for line in proc.stdout:
        lines.append(line)
        if line.startswith("Spark UI: http://"):
            # read at once: the run's workers take seconds to start after the session
            port = int(line.split()[-1].rsplit(":", 1)[1].strip("/"))
            addresses = listening_addresses(port)
            break
    else:
        msg = f"no Spark UI line: {''.join(lines)} {proc.stderr.read()[-2000:]}"
        raise AssertionError(msg)
    # the rest through the same reader: communicate() would read the pipe underneath it,
    # losing lines the loop's reader had buffered already (the start lines come at once)
    out = proc.stdout.read()
    err = proc.stderr.read()
    proc.wait(300)
    stdout = "".join(lines) + out
    assert proc.returncode == 0, err[-2000:]
    loopback = {"0100007F", "0000000000000000FFFF00000100007F", "00000000000000000000000001000000"}
    assert addresses and addresses <= loopback, (port, addresses)
    output = stdout + err
    assert "on spark (continuous mode)" in stdout and "worker turns)" in stdout, output
    assert "locally checkpointed" not in output, output  # Spark warned once per superstep
    assert " WARN " not in output, output  # Spark's log goes to its file, named at start
    assert "WARNING: Using incubator modules" not in output, output  # the JVM's, every start
    log_file = Path(stdout.split("Spark log: ")[1].split()[0])
    assert " WARN " in log_file.read_text()


def test_a_file_with_no_topology_is_a_usage_error():
    proc = sparkstorm("run", f"{TOPOLOGIES}:NOT_A_TOPOLOGY", "--engine", "local")
    assert proc.returncode == 2
    assert "gave int, not a Topology" in proc.stderr
    proc = sparkstorm("run", str(ROOT / "README.md"), "--engine", "local")
    assert proc.returncode == 2
    proc = sparkstorm("run", TOPOLOGIES, "--engine", "local")  # no attribute 'topology'
    assert proc.returncode == 2 and "has no attribute 'topology'" in proc.stderr


@pytest.mark.parametrize(
    ("attr", "expected"),
    [
        (
            "undeclared_subscription",
            "subscribes to stream 'default' of 'silent', which 'silent' "
            "does not declare (declared: []); declare it in "
            "'silent'.declare_output_fields",
        ),
        (
            "bad_field",
            "groups stream 'default' of 'counter' by field 'number', which that "
            "stream does not declare (declared: ['n'])",
        ),
    ],
)
def test_invalid_topology_exits_2_naming_the_culprit(attr, expected):
    proc = sparkstorm("run", f"{TOPOLOGIES}:{attr}", "--engine", "local")
    assert proc.returncode == 2
    assert expected in proc.stderr


def start(*args: str) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "120"}
    return subprocess.Popen(
        [sys.executable, "-m", "sparkstorm.cli", "run", *args],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_a_second_ctrl_c_aborts_the_drain_and_says_what_was_left(tmp_path):
    # message timeout 600 s: the graceful stop would wait for the held trees that long
    proc = start(f"{TOPOLOGIES}:endless", "--engine", "local")
    time.sleep(3)
    proc.send_signal(signal.SIGINT)
    time.sleep(1.5)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert "stopping: waiting up to 600s for" in out
    assert "aborted by a second interrupt:" in err
    assert "tracked messages were left without an outcome" in err
    assert "Traceback" not in err


def test_ctrl_c_during_spark_start_up_exits_130_in_one_line():
    proc = start("examples/exclamation.py")
    time.sleep(2.5)  # Spark's JVM takes longer than this to come up here
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    assert "Traceback" not in err and "py4j" not in err
    assert "interrupted during start-up" in err or "interrupted" in out


def test_sigterm_stops_gracefully_letting_a_buffering_bolt_ack_on_its_ticks(tmp_path):
    stats = tmp_path / "stats.json"
    proc = start(f"{TOPOLOGIES}:buffered", "--engine", "local", "--stats-json", str(stats))
    time.sleep(3)
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert "interrupted" in out
    spout = json.loads(stats.read_text())["components"]["counter"]
    # the held trees were acked by the bolt's next tick, not failed with shutdown
    assert spout["acked"] == spout["emitted"] > 0 and spout["failed"] == 0


def test_a_blocking_next_tuple_is_reported_and_the_first_ctrl_c_acts(tmp_path):
    stats = tmp_path / "stats.json"
    proc = start(f"{TOPOLOGIES}:blocking", "--engine", "local", "--stats-json", str(stats))
    time.sleep(9)  # start-up, then the watchdog's 5 s
    started = time.monotonic()
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert time.monotonic() - started < 10  # the drain waits the 2 s message timeout at most
    assert proc.returncode == 130, err
    assert "next_tuple() of spout 'blocker' task" in err
    assert "has not returned for 5 s: it must not block" in err
    spout = json.loads(stats.read_text())["components"]["blocker"]
    assert spout["emitted"] == 10 and spout["acked"] + spout["failed"] == 10


def test_a_run_whose_trees_fail_exits_1_with_a_counted_summary():
    proc = sparkstorm("run", f"{TOPOLOGIES}:failing", "--engine", "local", "--until-idle")
    assert proc.returncode == 1, proc.stderr
    assert (
        "run failed: 20 tuple trees failed for good (error 20); 20 errors reported by tasks"
        in proc.stderr
    )
    assert "error in boom (x20): ValueError: no good" in proc.stderr
    assert proc.stderr.count("Traceback") <= 1  # logged once, then counted


def test_trees_that_time_out_name_the_bolt_that_held_them():
    """Issue 67, item 4: "20 tuple trees failed for good (timeout 20)" named no bolt."""
    proc = sparkstorm("run", f"{TOPOLOGIES}:forgetful", "--engine", "local", "--until-idle")
    assert proc.returncode == 1, proc.stderr
    assert "forgetful executed 20 and acked none: a bolt must ack or fail" in proc.stderr


def test_a_grouping_on_a_misspelled_component_names_its_line_and_the_likely_name():
    """Issue 67, item 4: the line of create_topology() was named, not the typo's, and no
    "did you mean" was offered (configuration keys had one)."""
    proc = sparkstorm("run", f"{TOPOLOGIES}:misspelled", "--engine", "local")
    assert proc.returncode == 2, proc.stderr
    (line,) = proc.stderr.strip().splitlines()
    source = (ROOT / "tests" / "cli_topologies.py").read_text().splitlines()
    typo = next(i for i, text in enumerate(source, 1) if "the typo's line" in text)
    assert f"cli_topologies.py:{typo}: InvalidTopologyError" in line, line
    assert "unknown component 'sentence' (did you mean 'sentences'?" in line


def test_failures_replayed_and_acked_are_said_and_the_run_exits_0():
    """Issue 55, defect 5: every failure replayed and acked, and the run exited 1."""
    proc = sparkstorm("run", f"{TOPOLOGIES}:replaying", "--engine", "local", "--until-idle")
    assert proc.returncode == 0, proc.stderr
    said = proc.stdout + proc.stderr
    assert "143 messages failed, then were acked on replay (143 failures on the way: " in said
    assert "run failed" not in said


def test_topology_debug_prints_a_line_per_emit_and_outcome():
    proc = sparkstorm(
        "run", f"{TOPOLOGIES}:failing", "--engine", "local", "--until-idle",
        "--conf", "topology.debug=true", "--quiet",
    )  # fmt: skip
    assert proc.returncode == 1, proc.stderr
    assert proc.stderr.count("Emitting: finite default [") == 20
    assert proc.stderr.count("SPOUT Failing ") == 20
    assert proc.stderr.count("BOLT fail TASK: ") == 20


def test_a_broken_user_file_exits_2_with_one_line_naming_file_and_line(tmp_path):
    broken = tmp_path / "broken.py"
    broken.write_text("from sparkstorm import TopologyBuilder\n\ndef topology(:\n")
    proc = sparkstorm("run", str(broken), "--engine", "local")
    assert proc.returncode == 2
    assert proc.stderr.strip() == (
        f"sparkstorm: error: {broken}:3: SyntaxError: invalid syntax (importing {broken})"
    )
    broken.write_text("import os\n\nos.environ['NOPE_NOT_SET']\n")
    proc = sparkstorm("run", str(broken), "--engine", "local")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert f"{broken}:3: KeyError: 'NOPE_NOT_SET'" in proc.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["--conf", "topology.acker.executor=2"],
            "did you mean 'topology.acker.executors'?",
        ),
        (["--conf", "topology.enable.message.timeouts=maybe"], "takes true or false"),
        (["--conf", "sparkstorm.capture=exclaim9"], "names ['exclaim9'], which the topology"),
        (["--duration", "-5"], "expected a number of seconds > 0, got '-5'"),
        (["--duration", "nan"], "expected a number of seconds > 0, got 'nan'"),
        (["--stats-json", "/no/such/folder/stats.json"], "folder /no/such/folder is missing"),
    ],
)
def test_bad_options_exit_2_before_anything_runs(args, message):
    proc = sparkstorm("run", "examples/exclamation.py", "--engine", "local", *args)
    assert proc.returncode == 2
    assert message in proc.stderr
    assert "Traceback" not in proc.stderr


def test_an_abbreviated_option_is_refused_as_the_typo_it_may_be():
    proc = sparkstorm("run", "examples/exclamation.py", "--engin", "local")
    assert proc.returncode == 2
    assert "unrecognized arguments: --engin local" in proc.stderr


@pytest.mark.parametrize("columns", ["", "80"])
def test_output_that_is_not_a_terminal_is_not_wrapped_mid_sentence(columns):
    """A log or CI (COLUMNS unset, empty, or a terminal's 80) gets each line whole."""
    name = "a-topology-whose-name-alone-goes-past-the-eighty-columns-of-a-terminal-" + "x" * 20
    proc = sparkstorm(
        "run", "examples/exclamation.py", "--engine", "local", "--name", name, columns=columns
    )
    assert proc.returncode == 0, proc.stderr
    assert any(line.startswith(f"{name}: finished after ") for line in proc.stdout.splitlines())


def test_spark_options_with_the_local_engine_are_a_warning_not_an_error():
    """Switching to ``--engine local`` for a quick test needs no flags deleted."""
    spark_flags = ["--master", "local[2]", "--conf", "spark.ui.enabled=true"]
    proc = sparkstorm("run", "examples/exclamation.py", "--engine", "local", *spark_flags)
    assert proc.returncode == 0, proc.stderr
    assert (
        "sparkstorm: warning: --master, spark.* settings: only for --engine spark; this run "
        "uses local, where they do nothing"
    ) in proc.stderr
    assert "words acked: 1,000  failed: 0" in proc.stdout


def test_module_form_runs_from_the_current_directory():
    proc = sparkstorm("run", "examples.exclamation", "--engine", "local", "--quiet")
    assert proc.returncode == 0, proc.stderr
    assert "words acked: 1,000  failed: 0" in proc.stdout


def test_an_unreachable_master_fails_in_seconds_with_one_line():
    started = time.monotonic()
    proc = sparkstorm("run", "examples/exclamation.py", "--master", "spark://127.0.0.1:9")
    assert proc.returncode == 1
    assert time.monotonic() - started < 30
    assert proc.stderr.strip().startswith("sparkstorm: error: cannot reach the Spark master")
    assert len(proc.stderr.strip().splitlines()) == 1


def test_duration_stops_the_run_and_fails_pending_with_shutdown():
    from sparkstorm import run
    from tests.cli_topologies import endless

    topology, conf = endless()
    conf.set_message_timeout_secs(3)  # the drain waits for the held trees this long
    result = run(topology, conf, engine="local", duration=0.5)
    spout = result.stats["counter"]
    assert not result.interrupted and 3.5 <= result.elapsed_secs < 30
    assert spout["acked"] > 0 and spout["fail_reasons"] == {"shutdown": spout["failed"]}
    assert spout["acked"] + spout["failed"] == spout["emitted"]


RAISING = """
from sparkstorm import Bolt, Fields, Spout, TopologyBuilder

UNTIL_IDLE = True


class Three(Spout):
    def open(self, conf, context, collector):
        self.collector, self.left = collector, [1, 2, 3]

    def next_tuple(self):
        if self.left:
            n = self.left.pop()
            self.collector.emit([n], msg_id=n)

    def declare_output_fields(self, declarer):
        declarer.declare(Fields("n"))


class Picky(Bolt):
    def prepare(self, conf, context, collector):
        self.collector = collector

    def execute(self, tup):
        if tup[0] == 2:
            raise ValueError("two is not wanted here")
        self.collector.ack(tup)

    def declare_output_fields(self, declarer):
        pass


def topology():
    builder = TopologyBuilder()
    builder.set_spout("three", Three())
    builder.set_bolt("picky", Picky()).shuffle_grouping("three")
    return builder.create_topology()
"""


@pytest.mark.parametrize("mode", ["local", "superstep", "continuous"])
def test_a_raising_bolt_s_traceback_names_the_users_file_line_and_source(mode, tmp_path):
    """Copies of components are made by pickling; their code keeps the user's file name,
    so the traceback shows the file, the line and the line's source, on every engine.

    On Spark the UI is turned off by ``--no-spark-ui`` (continuous), or by a
    spark-defaults file given to ``--spark-conf`` (superstep), which reaches the session."""
    path = tmp_path / "picky.py"
    path.write_text(RAISING)
    settings = tmp_path / "spark-defaults.conf"
    settings.write_text("# as spark-defaults.conf\nspark.ui.enabled false\n")
    no_ui = ["--no-spark-ui"] if mode == "continuous" else ["--spark-conf", str(settings)]
    spark = ["--mode", mode, "--master", "local[2]", *no_ui]
    proc = sparkstorm("run", str(path), *(["--engine", "local"] if mode == "local" else spark))
    assert proc.returncode == 1, proc.stderr[-3000:]  # a tree failed with the error
    line = RAISING.splitlines().index('            raise ValueError("two is not wanted here")')
    assert f'File "{path}", line {line + 1}, in execute' in proc.stderr, proc.stderr[-3000:]
    assert 'raise ValueError("two is not wanted here")' in proc.stderr
    assert "<dynamic-code>" not in proc.stderr
    if mode != "local":  # the UI's line would come before the log's
        assert "Spark log: " in proc.stdout and "Spark UI" not in proc.stdout, proc.stdout


def test_version_and_python_dash_m_sparkstorm():
    import sparkstorm as package

    assert sparkstorm("--version").stdout.strip() == f"sparkstorm {package.__version__}"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-m", "sparkstorm", "--version"], capture_output=True, text=True, env=env
    )
    assert done.returncode == 0 and done.stdout.strip() == f"sparkstorm {package.__version__}"


def listening_addresses(port: int) -> set[str]:
    """The local addresses (hex, as /proc shows them) with a socket listening on ``port``."""
    found = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            local, state = line.split()[1], line.split()[3]
            address, hex_port = local.rsplit(":", 1)
            if int(hex_port, 16) == port and state == "0A":  # LISTEN
                found.add(address)
    return found


@pytest.mark.parametrize("engine", ["local", "continuous"])
def test_an_unreachable_state_store_is_one_line_naming_it_without_its_password(engine):
    config = '{"url": "redis://:secret@127.0.0.1:1/0"}'
    where = (
        ["--engine", "local"] if engine == "local" else ["--master", "local[2]", "--no-spark-ui"]
    )
    proc = sparkstorm(
        "run",
        f"{TOPOLOGIES}:steady_stateful",
        *where,
        "--duration",
        "5",
        "--conf",
        "topology.state.provider=redis",
        "--conf",
        f"topology.state.provider.config={config}",
    )
    assert proc.returncode == 1, proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr and "secret" not in proc.stderr
    (line,) = [x for x in proc.stderr.splitlines() if "state provider" in x]
    assert line.startswith(
        "sparkstorm: error: state provider 'redis' at redis://:***@127.0.0.1:1/0"
    )
    assert "topology.state.provider.config" in line


def test_a_stateful_run_says_which_checkpoint_it_resumes_from(tmp_path):
    """State is kept under the topology's name: the second run of a name resumes."""
    config = json.dumps({"path": (tmp_path / "state").as_uri()})
    args = ["--engine", "local", "--duration", "2", "--name", "resumed"]
    args += ["--conf", "topology.state.provider=directory"]
    args += ["--conf", f"topology.state.provider.config={config}"]
    first = sparkstorm("run", f"{TOPOLOGIES}:steady_stateful", *args)
    assert first.returncode == 0, first.stderr[-2000:]
    assert "state: no checkpoint of 'resumed' in the directory provider" in first.stdout
    second = sparkstorm("run", f"{TOPOLOGIES}:steady_stateful", *args)
    assert second.returncode == 0, second.stderr[-2000:]
    assert re.search(r"state: resuming 'resumed' from checkpoint \d+ \(directory", second.stdout)


def test_every_verb_and_option_says_what_it_does_in_plain_text():
    from sparkstorm.cli import build_parser

    parser = build_parser()
    assert "``" not in parser.format_help()  # no reStructuredText in a terminal
    (verbs,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    for verb, sub in verbs.choices.items():
        for action in sub._actions:
            assert action.help, f"sparkstorm {verb} {action.dest}: no help"


def test_a_run_is_named_after_its_module_or_file():
    """Issue 56, defect 4: ``examples.arrow_word_count`` named its run ``examples``."""
    from sparkstorm.cli.running import run_name

    assert run_name("examples.arrow_word_count") == "arrow_word_count"
    assert run_name("examples.word_count:topology") == "word_count"
    assert run_name("examples/arrow_word_count.py") == "arrow_word_count"
    assert run_name("topologies/wordcount.py:WordCount") == "wordcount"
    assert run_name("first.py") == "first"


def test_trident_state_read_with_nothing_running_says_what_can_be_known():
    """Issue 56, defect 4: it said "Trident batch 0 committed last"."""
    done = sparkstorm("state", "trident_word_count", "--from", "examples/trident_word_count.py")
    assert done.returncode == 0, done.stderr
    assert "batch 0 committed last" not in done.stdout
    assert "its progress is kept in a run's memory, which is gone once the run ends" in (
        done.stdout
    )


def test_rebalance_takes_storms_executors_option():
    """``sparkstorm rebalance NAME -n 2 -e split=1 -e count=2``: Storm's body, checked."""
    import argparse

    from sparkstorm.cli.exits import UsageError
    from sparkstorm.cli.options import build_parser
    from sparkstorm.cli.verbs import _rebalance_options

    args = build_parser().parse_args(
        ["rebalance", "wc", "-n", "2", "-e", "split=1", "-e", "count=2"]
    )
    assert _rebalance_options(args) == {"numWorkers": 2, "executors": {"split": 1, "count": 2}}
    with pytest.raises(UsageError, match="-e split: give COMPONENT=N"):
        _rebalance_options(argparse.Namespace(workers=None, executors=["split"]))
