"""One line describing the machine a benchmark ran on."""

from __future__ import annotations

import os
import platform
import re
import subprocess
import time


def machine() -> str:
    """Cores, memory, Python, Spark and Java versions, and the date."""
    try:
        import pyspark

        spark = pyspark.__version__
    except ImportError:
        spark = "-"
    java = subprocess.run(["java", "-version"], capture_output=True, text=True, check=False)
    found = re.search(r'version "([^"]+)"', java.stderr)
    mem_gib = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    return (
        f"machine: {os.cpu_count()} cores, {mem_gib:.0f} GiB, Python "
        f"{platform.python_version()}, Spark {spark}, Java "
        f"{found.group(1) if found else '-'}, {time.strftime('%Y-%m-%d')}"
    )
