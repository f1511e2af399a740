"""The MPI runtime: rank 0 is the master, ranks 1..N are the workers (worker n of a code is rank
n + 1). Everything that touches MPI lives in this package, and nothing here imports the
simulator or the reports:

- ``session``:  one owner of a rank's life — ``run(spec)`` (the ``run`` and ``probe``
                commands) and ``block`` (rounds inside a program already up: benchmarks);
- ``run``, ``probe``: what rank 0 does in a run and in a probe, step by step;
- ``startup``:  the start-up message and the handshake (HELLO, READY);
- ``master``:   rank 0's round engine, calling the same trial code as the simulator;
- ``trials``:   a run's trials through the engine, their records to the file in order;
- ``lost``, ``deaths``, ``hung``: the workers rank 0 loses (dead, silent) and how it knows;
- ``notices``:  the workers' NOTICEs (a signal, hydra's notice, the BYE);
- ``ending``:   the end of the rounds: abandon, EXIT and BYE, or MPI_Abort;
- ``worker``:   the loop on ranks 1..: sleep the injected delay, compute f, reply (FAILED
                with the reason when f fails: an erasure);
- ``protocol``: the wire format (tags, float64 headers) shared by both sides;
- ``mpi``:      MPI start-up, the abort hook, how a rank waits (busy or polite polling);
- ``witness``, ``warden``: processes outside MPI that name a rank whose death ends the job
                (rank 0's) and end what is left of the job on each host.

Importing this package does not initialise MPI (``mpi.start`` does, when a session begins).
"""
