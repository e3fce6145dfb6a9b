/* cuzk-synth: see synth/synth.h. */
#include "synth/synth.h"

int main(int argc, char **argv)
{
    return stage_main(argc, argv, "cuzk-synth", "Synthesis stage: witness -> a, b, c in a shared buffer.", 0,
                      synth_run);
}
