/* cuzk — the client. Subcommands dispatch to their modules; this file stays thin. */
#include <stdio.h>
#include <string.h>

#include "tools/build_witness.h"
#include "tools/client.h"
#include "base/error.h"
#include "base/version.h"
#include "tools/fingerprint_cmd.h"
#include "tools/prove_local.h"
#include "tools/test_setup_cmd.h"
#include "tools/token_cmd.h"
#include "tools/verify_cmd.h"
#include "tools/witness_cmd.h"

/* `cuzk help exit-codes [--markdown]`: the exit-code table of every program, as
 * text or as docs/usage.md's Markdown table (test_error checks that they agree). */
static int exit_codes_main(int argc, char **argv)
{
    if (argc == 1) {
        cuzk_exit_help(stdout, CUZK_PROG_ALL, NULL);
        return CUZK_EXIT_OK;
    }
    if (argc == 2 && strcmp(argv[1], "--markdown") == 0) {
        cuzk_exit_markdown(stdout);
        return CUZK_EXIT_OK;
    }
    fputs("usage: cuzk help exit-codes [--markdown]\n", stderr);
    return CUZK_EXIT_USAGE;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        client_usage(stderr);
        return CUZK_EXIT_USAGE;
    }
    const char *cmd = argv[1];
    if (strcmp(cmd, "prove-local") == 0) return prove_local_main(argc - 1, argv + 1);
    if (strcmp(cmd, "verify") == 0) return verify_cmd_main(argc - 1, argv + 1);
    if (strcmp(cmd, "build-witness") == 0) return build_witness_main(argc - 1, argv + 1);
    if (strcmp(cmd, "witness") == 0) return witness_cmd_main(argc - 1, argv + 1);
    if (strcmp(cmd, "fingerprint") == 0) return fingerprint_cmd_main(argc - 1, argv + 1);
    if (strcmp(cmd, "test-setup") == 0) return test_setup_cmd_main(argc - 1, argv + 1);
    if (strcmp(cmd, "token") == 0) return token_cmd_main(argc - 1, argv + 1);
    if (strcmp(cmd, "help") == 0 && argc > 2 && strcmp(argv[2], "exit-codes") == 0)
        return exit_codes_main(argc - 2, argv + 2);
    if (strcmp(cmd, "--version") == 0) {
        printf("cuzk %s\n", cuzk_version());
        return CUZK_EXIT_OK;
    }
    if (strcmp(cmd, "help") == 0 || strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0) {
        client_usage(stdout);
        return CUZK_EXIT_OK;
    }
    return client_main(argc, argv);
}
