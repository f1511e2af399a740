"""The exception types the CLI reports in one line: bad user input (job files, data files,
arguments), and a machine that runs out of disk or memory."""


class JobError(ValueError):
    """Bad job file, data file or argument: the CLI prints one line and exits with code 2.

    ``key`` names the offending job-file key (dotted, e.g. ``"code.workers"``) when there is one,
    so the message always says where the problem is.
    """

    def __init__(self, key, message):
        self.key = key
        super().__init__(f"{key}: {message}" if key else message)


class ResourceError(RuntimeError):
    """The machine ran out of disk space or memory during a run: the CLI prints one line and
    exits with code 1; the results file keeps its last commit, and --resume continues it."""

    code = 1


def resource_line(e):
    """The one line the CLI prints for a ResourceError or a MemoryError."""
    if isinstance(e, MemoryError):
        return ("out of memory (MemoryError); a results file being written keeps its last "
                "commit: free memory, or lower code.workers or decode.pipeline, and continue it "
                "with --resume")
    return str(e)
