/* cuzk-gpuworker: see include/cuzk/worker.h. */
#include "cuzk/worker.h"

int main(int argc, char **argv)
{
    return pipe_stage_main(argc, argv, "cuzk-gpuworker",
                           "Proving stage: NTTs and MSMs of synthesized partitions.",
                           PIPE_OPT_BACKEND, worker_run);
}
