"""The exit codes of ``sparkstorm``, and the error that is exit code 2."""

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130


class UsageError(Exception):
    """The command line or the target cannot be used; exit code 2."""
