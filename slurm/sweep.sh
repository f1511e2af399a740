#!/bin/bash
# A whole sweep in one command: one array task per sweep point, then the merge and analysis.
#
#   bash slurm/sweep.sh JOB.toml [sbatch options ...] [-- run arguments ...]
#   bash slurm/sweep.sh jobs/sweep-small.toml --ntasks=12 --time=0:20:00
#
# Checks the job (`validate`, one line naming the problem and exit code 2 if it is wrong),
# counts its sweep points P and submits
#   1. slurm/run.sbatch as an array, task I = point I -> $GCC_MPI_OUT/<name>-p<I>.h5; with
#      --array=0-(P-1) and --ntasks = (largest code.workers over the points) + 1 unless the
#      options give them;
#   2. slurm/analyze.sbatch with --dependency=afterok:<array> --kill-on-invalid-dep=yes: it
#      merges the point files into <name>.h5 and analyses it once every task succeeded, and is
#      cancelled (not left pending forever) if one fails.
# The sbatch options go to both jobs, except the ones that shape the array's allocation
# (--ntasks, --nodes, --ntasks-per-node, --cpus-per-task, --mem*, --array), which the
# one-process analysis does not need. Run arguments after `--` (e.g. --set job.trials=20) go
# to every array task, and their --set to the point count.
#
# Prints what it submitted on stderr, and on its last line (stdout) the two job ids:
#   <array id> <analysis id>
# Environment: as run.sbatch (GCC_MPI_PYTHON, GCC_MPI_OUT, GCC_MPI_LAUNCHER, ...); sbatch
# passes it on to both jobs.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
usage="usage: bash slurm/sweep.sh JOB.toml [sbatch options ...] [-- run arguments ...]"
[[ $# -gt 0 && $1 != -* ]] || { echo "sweep.sh: $usage" >&2; exit 2; }
job=$1
shift
py=${GCC_MPI_PYTHON:-python}

options=() run_args=()
while (($#)); do
    if [[ $1 == -- ]]; then shift; run_args=("$@"); break; fi
    options+=("$1")
    shift
done
sets=()  # the run arguments' --set KEY=VALUE, which may change the points
for ((i = 0; i < ${#run_args[@]}; i++)); do
    case ${run_args[i]} in
        --set) sets+=(--set "${run_args[i + 1]:-}"); ((i += 1)) ;;
        --set=*) sets+=("${run_args[i]}") ;;
    esac
done

why=$("$py" -c "import gcc_mpi" 2>&1) || {
    echo "sweep.sh: python '$py' ($(command -v "$py" || echo 'not found')) cannot import" \
         "gcc_mpi (${why##*$'\n'}): activate its environment or set GCC_MPI_PYTHON to its" \
         "python (the jobs use the same one)" >&2
    exit 2
}
"$py" -m gcc_mpi validate "$job" ${sets[@]+"${sets[@]}"} > /dev/null  # one line if it is wrong
counts=$("$py" -c '
import sys
from gcc_mpi.job.config import parse_override
from gcc_mpi.job.parse import load_job
job = load_job(sys.argv[1], [parse_override(s) for s in sys.argv[2:] if s != "--set"])
print(len(job.points), max(p.config.code.workers for p in job.points))
' "$job" ${sets[@]+"${sets[@]}"})
read -r points workers <<< "$counts"

# Which allocation options the user gave, and the ones the analysis job leaves out.
has_ntasks= has_array= ntasks= analysis=() skip= prev=
for o in ${options[@]+"${options[@]}"}; do
    case $prev in --ntasks | -n) ntasks=$o ;; esac
    prev=$o
    if [[ -n $skip ]]; then skip=; continue; fi
    case $o in
        --ntasks=*) ntasks=${o#*=} ;;&
        -n?*) ntasks=${o#-n} ;;&
        --ntasks=* | -n?* | --ntasks-per-node=*) has_ntasks=1 ;;&
        --ntasks | -n | --ntasks-per-node) has_ntasks=1 ;;&
        --array=* | -a?*) has_array=1 ;;&
        --array | -a) has_array=1 ;;&
        --ntasks=* | --nodes=* | --ntasks-per-node=* | --cpus-per-task=* | --mem=* \
            | --mem-per-cpu=* | --array=* | -[nNca]?*) ;;
        --ntasks | --nodes | --ntasks-per-node | --cpus-per-task | --mem | --mem-per-cpu \
            | --array | -[nNca]) skip=1 ;;
        *) analysis+=("$o") ;;
    esac
done
if [[ $ntasks =~ ^[0-9]+$ ]] && ((ntasks < workers + 1)); then  # a task would fail at once
    echo "sweep.sh: --ntasks=$ntasks is too few for $job: a sweep point has code.workers =" \
         "$workers, which needs $((workers + 1)) ranks (rank 0 is the master)" >&2
    exit 2
fi
defaults=(--job-name=gcc_mpi-sweep "--output=%x-%A_%a.out")
[[ -n $has_array ]] || defaults+=("--array=0-$((points - 1))")
[[ -n $has_ntasks ]] || defaults+=("--ntasks=$((workers + 1))")

array=$(sbatch --parsable "${defaults[@]}" ${options[@]+"${options[@]}"} \
        "$here/run.sbatch" "$job" ${run_args[@]+"${run_args[@]}"})
array=${array%%;*}  # "id;cluster" on a multi-cluster site
echo "sweep.sh: $job: $points sweep point(s), N <= $workers: array job $array" \
     "(${defaults[*]:2} ${options[*]-})" >&2
analysis_id=$(sbatch --parsable ${analysis[@]+"${analysis[@]}"} \
              --dependency="afterok:$array" --kill-on-invalid-dep=yes \
              "$here/analyze.sbatch" "$job") || {
    echo "sweep.sh: the analysis job was not submitted; the array job $array runs:" \
         "afterwards: sbatch slurm/analyze.sbatch $job" >&2
    exit 1
}
analysis_id=${analysis_id%%;*}
echo "sweep.sh: merge and analysis job $analysis_id (after every task of $array succeeded;" \
     "cancelled if one fails) -> ${GCC_MPI_OUT:-results}/$(basename "$job" .toml).h5" >&2
echo "$array $analysis_id"
