#pragma once

// How this process was started: by an MPI launcher (mpirun, or srun/prterun through PMI or PMIx) or
// alone. Read from the variables the launchers set, so that it is known before MPI_Init (a process
// started alone never initializes MPI) and so that notes can name their rank without any global.

#include <functional>
#include <optional>
#include <string>

namespace memstress {

// Looks up an environment variable; nullptr when unset. Tests pass their own.
using EnvLookup = std::function<const char*(const char*)>;
EnvLookup process_env();

// True when OMPI_COMM_WORLD_SIZE, PMIX_RANK or PMI_SIZE is set.
bool launched_by_mpi(const EnvLookup& env);
// This process's rank as the launcher gives it (OMPI_COMM_WORLD_RANK, PMIX_RANK, PMI_RANK), if any.
std::optional<int> launcher_rank(const EnvLookup& env);

// "memstress: " on rank 0 and alone; "memstress: rank N: " on the other ranks of a job.
std::string note_prefix();

}  // namespace memstress
