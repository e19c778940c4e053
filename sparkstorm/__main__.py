"""``python -m sparkstorm``: the ``sparkstorm`` command."""

import sys

from sparkstorm.cli import main

sys.exit(main())
