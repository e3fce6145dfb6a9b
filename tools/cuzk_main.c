/* cuzk — the client. Subcommands dispatch to their modules; this file stays thin. */
#include <stdio.h>
#include <string.h>

#include "cuzk/error.h"
#include "cuzk/prove_local.h"
#include "cuzk/verify_cmd.h"

static void usage(FILE *f)
{
    fputs("usage: cuzk COMMAND [ARGS]\n"
          "commands:\n"
          "  prove-local ZKEY WTNS PROOF.json PUBLIC.json   prove in this process (no daemon)\n"
          "  verify VKEY.json PUBLIC.json PROOF.json        verify a proof (as snarkjs groth16 verify)\n"
          "  help                                           this text\n"
          "run `cuzk COMMAND --help` for a command's options.\n",
          f);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return CUZK_E_USAGE;
    }
    const char *cmd = argv[1];
    if (strcmp(cmd, "prove-local") == 0) return prove_local_main(argc - 1, argv + 1);
    if (strcmp(cmd, "verify") == 0) return verify_cmd_main(argc - 1, argv + 1);
    if (strcmp(cmd, "help") == 0 || strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0) {
        usage(stdout);
        return 0;
    }
    fprintf(stderr, "cuzk: unknown command '%s'\n", cmd);
    usage(stderr);
    return CUZK_E_USAGE;
}
