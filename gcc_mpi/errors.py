"""The one exception type for bad user input (job files, data files, arguments)."""


class JobError(ValueError):
    """Bad job file, data file or argument: the CLI prints one line and exits with code 2.

    ``key`` names the offending job-file key (dotted, e.g. ``"code.workers"``) when there is one,
    so the message always says where the problem is.
    """

    def __init__(self, key, message):
        self.key = key
        super().__init__(f"{key}: {message}" if key else message)
