/* cuzk-finalizer: see finalizer/finalizer.h. */
#include "finalizer/finalizer.h"

#include <string.h>

#include "finalizer/out_writer.h"

int main(int argc, char **argv)
{
    /* The finalizer's per-out-dir writer processes are this binary too (out_writer.h). */
    if (argc >= 2 && !strcmp(argv[1], "--out-writer")) return out_writer_main(argc, argv);
    return stage_main(argc, argv, "cuzk-finalizer",
                      "Finalizing stage: blind, write proof.json/public.json, complete jobs.", STAGE_OPT_TRIM,
                      finalizer_run);
}
