#!/bin/sh
# run_with_affinity.sh CPUS COUNT PROGRAM [ARGS...]: runs PROGRAM under `taskset -c CPUS` with
# SONIC_EXPECT_AFFINITY=COUNT, the CPUs that list names, for the check that the executor's
# default pool has the cores the process was given (tests/unit/test_usable_cores.cpp). Exits 77
# (ctest's SKIP_RETURN_CODE here) where taskset is missing or the machine cannot give those CPUs.
cpus=$1
count=$2
shift 2
if ! command -v taskset >/dev/null 2>&1; then
  echo "taskset not found: skipped"
  exit 77
fi
# nproc counts the affinity mask (OMP_* would change its answer); a CPU the machine lacks is
# dropped from the mask silently, so the count tells whether the list was given whole.
given=$(env -u OMP_NUM_THREADS -u OMP_THREAD_LIMIT taskset -c "$cpus" nproc 2>/dev/null)
if [ "$given" != "$count" ]; then
  echo "CPUs $cpus cannot all be given to a process here (got ${given:-none}): skipped"
  exit 77
fi
SONIC_EXPECT_AFFINITY=$count exec taskset -c "$cpus" "$@"
