"""gcc_mpi: straggler-resilient coded computing, simulated or over MPI."""

__version__ = "0.1.0"
