"""A command refused in one line: the check the tests of bad outputs and bad inputs share."""

from gcc_mpi.cli.main import main


def one_line(capsys, argv, victim, *expect):
    """``main(argv)`` exits 2 with one line on stderr, ``gcc_mpi: error: ...`` holding each of
    ``expect`` and no traceback, and the file ``victim`` is byte for byte unchanged; the line."""
    before = victim.read_bytes()
    capsys.readouterr()
    assert main(argv) == 2
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("gcc_mpi: error: "), err
    assert "Traceback" not in err and all(e in err for e in expect), err
    assert victim.read_bytes() == before      # the file untouched
    return lines[0]
