"""The Spark session sparkstorm runs on: Java checked, master probed, Spark's log in a file.

Everything here runs on the driver before the first superstep: it decides what a user
sees when Spark cannot start (one line, not a page of Java frames) and keeps Spark's
own per-superstep log lines out of the terminal.
"""

from __future__ import annotations

import logging
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sparkstorm.errors import SparkStormError
from sparkstorm.private_files import private_temp_dir, write_private
from sparkstorm.tasks.log_levels import hide_secrets

if TYPE_CHECKING:
    from pyspark import SparkConf
    from pyspark.sql import SparkSession


log = logging.getLogger(__name__)
hide_secrets()  # before any py4j call, a session given by spark-submit's included

MIN_JAVA = 17


def check_java() -> None:
    """Raise a clear error unless Java 17 or newer is available to start Spark."""
    home = os.environ.get("JAVA_HOME")
    java = os.path.join(home, "bin", "java") if home else shutil.which("java")
    hint = (
        "install OpenJDK 17 or newer (Debian/Ubuntu: apt-get install "
        "openjdk-17-jre-headless) or set JAVA_HOME to one"
    )
    if not java or not os.path.exists(java):
        msg = f"the spark engine needs Java {MIN_JAVA}+, and no java was found; {hint}"
        raise SparkStormError(msg)
    out = subprocess.run([java, "-version"], capture_output=True, text=True, check=False)
    found = re.search(r'version "(\d+)(?:\.(\d+))?', out.stderr + out.stdout)
    major = int(found.group(1)) if found else 0
    if major == 1 and found and found.group(2):
        major = int(found.group(2))  # "1.8.0" is Java 8
    if major < MIN_JAVA:
        msg = f"the spark engine needs Java {MIN_JAVA}+, but {java} is Java {major or '?'}; {hint}"
        raise SparkStormError(msg)


def _get_or_create(builder: SparkSession.Builder, sql: bool) -> SparkSession:
    """``builder.getOrCreate()`` with Ctrl-C held until the session is up, then acted on.

    The session starts in a thread of its own. In the main thread PySpark would install
    its own SIGINT handler halfway through, one that calls into the JVM from inside
    whatever py4j call the main thread is making and prints py4j's tracebacks. An
    interrupt also cannot be taken during the gateway's launch: it deletes the directory
    the JVM is about to write its port into, and the JVM stays up orphaned. So the first
    Ctrl-C waits for the session, stops it and raises ``KeyboardInterrupt``; a second one
    raises at once, for a launch that hangs (the JVM exits with this process).
    """
    hide_secrets()  # py4j writes its gateway's token at DEBUG
    outcome: dict[str, Any] = {}

    def start() -> None:
        try:
            _launch_gateway(builder)
            outcome["session"] = builder.getOrCreate() if sql else SqlOnDemand(builder)
        except BaseException as exc:  # re-raised in the caller's thread
            outcome["error"] = exc

    starter = threading.Thread(target=start, name="sparkstorm-spark-start", daemon=True)
    interrupted: list[int] = []

    def hold(signum: int, frame: object) -> None:
        if interrupted:
            raise KeyboardInterrupt
        interrupted.append(signum)

    in_main = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGINT, hold) if in_main else None
    try:
        starter.start()
        while starter.is_alive():
            starter.join(0.1)
    finally:
        if in_main:
            signal.signal(signal.SIGINT, previous)
    if "error" in outcome:
        raise outcome["error"]
    session: SparkSession = outcome["session"]
    if interrupted:  # Ctrl-C came while the JVM started: stop it, then act on the Ctrl-C
        session.stop()
        raise KeyboardInterrupt
    return session


def create_session(
    master: str = "local[*]",
    conf: dict[str, str] | None = None,
    *,
    ui: bool = True,
    sql: bool = True,
) -> SparkSession:
    """A SparkSession for sparkstorm: the given master, reused Python workers, quiet logs.

    The Spark UI runs on a free port (``spark.sparkContext.uiWebUrl`` says where) unless
    ``ui`` is False; on a local master it listens on loopback only, as sparkstorm's own
    page does (Spark binds its UI to ``SPARK_LOCAL_IP``, else to every interface).
    Its kill buttons are off (``spark.ui.killEnabled``): the UI asks no one who they are,
    so any local user (or a page in a browser) that reaches it could end the run.
    ``conf`` (any ``spark.*`` setting) goes over these defaults. Workers run this
    interpreter unless ``PYSPARK_PYTHON`` says otherwise. With ``sql`` False, Spark SQL
    starts only when something other than ``sparkContext`` is asked of the session
    (:class:`SqlOnDemand`).
    """
    check_java()
    check_master(master)
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark import SparkContext
    from pyspark.sql import SparkSession

    builder = (
        SparkSession.builder.master(master)
        .appName("sparkstorm")
        .config("spark.ui.enabled", str(ui).lower())
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.python.worker.reuse", "true")
        # the UI has no login: anyone who reaches its port could kill the run's stages
        .config("spark.ui.killEnabled", "false")
    )
    if ui:
        builder = builder.config("spark.ui.port", str(_free_port()))
    settings = dict(conf or {})
    log_file = None
    if SparkContext._active_spark_context is None:  # the JVM starts here: its log goes to a file
        if master.startswith("local"):
            os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
        log_file = _log_file()
        java_options = f"-Dlog4j2.configurationFile={_log_config(log_file)}"
        given = settings.get("spark.driver.extraJavaOptions")
        settings["spark.driver.extraJavaOptions"] = " ".join(filter(None, [given, java_options]))
    for key, value in settings.items():
        builder = builder.config(key, value)
    session = _get_or_create(builder, sql)
    if log_file is not None:  # a session reused here keeps the file its creator named
        session.sparkstorm_log_file = log_file  # type: ignore[attr-defined]
    quiet_superstep_warnings(session)
    return session


class SqlOnDemand:
    """A SparkSession whose Spark SQL starts on first use.

    ``sparkContext`` is there at once; any other attribute is the session's, made the
    first time one is asked for. The continuous mode's workers are one barrier stage of
    RDD work: it needs the SparkContext only. Spark SQL's own start is about 2 s on a
    2-core machine (the SparkContext 2.1 s, then the SparkSession 2.2 s more), a fifth
    of a run's start-up, paid by every ``sparkstorm run`` for nothing.
    """

    def __init__(self, builder: SparkSession.Builder) -> None:
        from pyspark import SparkConf, SparkContext

        self._builder = builder
        self.sparkContext = SparkContext.getOrCreate(_spark_conf(builder) or SparkConf())
        self._session: SparkSession | None = None

    def __getattr__(self, name: str) -> Any:
        """Only for what this object has not got: the session's, made the first time."""
        if name.startswith("_"):
            raise AttributeError(name)
        if self._session is None:
            self._session = self._builder.getOrCreate()
        return getattr(self._session, name)

    def stop(self) -> None:
        """Stop Spark (the session's, if one was made)."""
        (self._session or self.sparkContext).stop()


QUIET_JVM_LINES = ("WARNING: Using incubator modules",)
"""Lines of the JVM's own stderr not passed on: Spark adds ``jdk.incubator.vector`` to
every JVM it starts (for MLlib's BLAS), and the JVM says so on every run."""


def _launch_gateway(builder: SparkSession.Builder) -> None:
    """Start the JVM for ``builder``, its stderr passed on but for :data:`QUIET_JVM_LINES`.

    PySpark starts it on the first ``getOrCreate`` with this process's stderr; started
    here with the same settings, the session then takes it as its own. Spark's log goes
    to a file (:func:`_log_config`), so little else comes that way, and all of it shows.
    """
    from pyspark import SparkContext
    from pyspark.java_gateway import launch_gateway

    conf = _spark_conf(builder)
    if SparkContext._gateway is not None or conf is None:
        return
    gateway = launch_gateway(conf, popen_kwargs={"stderr": subprocess.PIPE})  # type: ignore[no-untyped-call]
    jvm_stderr = gateway.proc.stderr

    def pass_on() -> None:
        for line in iter(jvm_stderr.readline, b""):
            text = line.decode(errors="replace")
            if not text.startswith(QUIET_JVM_LINES):  # a notebook's stderr takes text only
                sys.stderr.write(text)
                sys.stderr.flush()

    threading.Thread(target=pass_on, name="sparkstorm-jvm-stderr", daemon=True).start()
    SparkContext._gateway, SparkContext._jvm = gateway, gateway.jvm


def _spark_conf(builder: SparkSession.Builder) -> SparkConf | None:
    """The settings ``builder`` was given, as a SparkConf (None: a PySpark without them)."""
    from pyspark import SparkConf

    options = getattr(builder, "_options", None)  # PySpark's, since 2.0
    return None if options is None else SparkConf().setAll(list(options.items()))


def _log_file() -> Path:
    """Where Spark's log goes: this user's own folder (``$TMPDIR/sparkstorm-UID``, 0700)."""
    folder = private_temp_dir("sparkstorm")
    return folder / f"spark-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}.log"


def _log_config(log_file: Path) -> Path:
    """A log4j2 configuration that sends Spark's log (WARN and up) to ``log_file`` only.

    Spark's default writes to the terminal, where its per-superstep WARN lines would land
    inside the live statistics table; the file keeps them for whoever needs them.
    """
    config = log_file.with_suffix(".log4j2.properties")
    text = (
        "rootLogger.level = warn\n"
        "rootLogger.appenderRef.file.ref = file\n"
        "appender.file.type = File\n"
        "appender.file.name = file\n"
        f"appender.file.fileName = {log_file}\n"
        "appender.file.layout.type = PatternLayout\n"
        "appender.file.layout.pattern = %d{yy/MM/dd HH:mm:ss} %p %c{1}: %m%n%ex\n"
    )
    config.unlink(missing_ok=True)  # a file of the same name is this user's, from before
    write_private(config, text.encode(), exclusive=True)
    return config


MASTER_PROBE_SECS = 5.0


def check_master(master: str) -> None:
    """Fail in seconds, in one line, when a standalone master cannot be reached.

    Spark itself retries a ``spark://`` master for over a minute and prints a stack of
    Java frames per attempt; a TCP connect to each listed host says the same at once.
    """
    if not master.startswith("spark://"):
        return
    for address in master.removeprefix("spark://").split(","):
        host, _, port = address.rpartition(":")
        try:
            socket.create_connection((host, int(port)), timeout=MASTER_PROBE_SECS).close()
            return
        except (OSError, ValueError) as exc:
            problem = exc
    msg = (
        f"cannot reach the Spark master {master} ({problem}); start it, or pass "
        f"--master local[*] to run on this machine"
    )
    raise SparkStormError(msg)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("", 0))
        port: int = probe.getsockname()[1]
        return port


QUIET_LOGGERS = (
    # "RDD n was locally checkpointed, its lineage has been truncated...": once per
    # superstep, when the engine releases the checkpoint nothing reads any more
    "org.apache.spark.rdd.MapPartitionsRDD",
    "org.apache.spark.rdd.RDD",
)


def quiet_superstep_warnings(session: SparkSession) -> None:
    """Raise the log level of Spark's loggers that warn once per superstep to ERROR."""
    try:
        jvm: Any = session.sparkContext._jvm
        level = jvm.org.apache.logging.log4j.Level.ERROR
        for name in QUIET_LOGGERS:
            jvm.org.apache.logging.log4j.core.config.Configurator.setLevel(name, level)
    except Exception as exc:  # Spark Connect has no JVM here; a log level is no reason to stop
        log.debug("could not quiet Spark's per-superstep warnings: %s", exc)


def driver_host(spark: Any) -> str:
    """The address executors reach the driver at (Spark's ``spark.driver.host``)."""
    host: str | None = spark.sparkContext.getConf().get("spark.driver.host")
    return host or socket.gethostname()
