"""Ctrl-C the moment PySpark's context is up but the session is not yet returned.

Run as a script by test_session.py: PySpark installs its own SIGINT handler at that
point when it starts in the main thread, and that handler's call into the JVM, made
from inside the main thread's py4j call, printed py4j's tracebacks.
"""

import os
import signal
import sys
import threading
import time

from pyspark import SparkContext

from sparkstorm.engines.spark.session import create_session


def pyspark_handler_installed() -> bool:
    return getattr(signal.getsignal(signal.SIGINT), "__qualname__", "").startswith("SparkContext")


def interrupt_once_the_context_is_up() -> None:
    while getattr(SparkContext._active_spark_context, "_temp_dir", None) is None:
        time.sleep(0.0005)
    deadline = time.monotonic() + 0.005  # PySpark's handler, if it comes, comes right after
    while not pyspark_handler_installed() and time.monotonic() < deadline:
        time.sleep(0.0002)
    os.kill(os.getpid(), signal.SIGINT)


threading.Thread(target=interrupt_once_the_context_is_up, daemon=True).start()
try:
    create_session("local[1]", ui=False)
except KeyboardInterrupt:
    print("interrupted", SparkContext._active_spark_context)
    sys.exit(130)
print("not interrupted")
