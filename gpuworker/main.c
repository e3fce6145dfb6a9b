/* cuzk-gpuworker: see gpuworker/worker.h. `cuzk-gpuworker prove ...` runs one
 * witness through a backend outside the daemon (prove.c). */
#include <string.h>

#include "gpuworker/worker.h"

int main(int argc, char **argv)
{
    if (argc > 1 && !strcmp(argv[1], "prove")) return worker_prove_main(argc - 1, argv + 1);
    return stage_main(argc, argv, "cuzk-gpuworker",
                      "Proving stage: NTTs and MSMs of synthesized partitions.\n"
                      "  (cuzk-gpuworker prove --help: one witness, no daemon)",
                      STAGE_OPT_BACKEND, worker_run);
}
