/* cuzk-finalizer: see include/cuzk/finalizer.h. */
#include "cuzk/finalizer.h"

int main(int argc, char **argv)
{
    return pipe_stage_main(argc, argv, "cuzk-finalizer",
                           "Finalizing stage: blind, write proof.json/public.json, complete jobs.",
                           PIPE_OPT_TRIM, finalizer_run);
}
