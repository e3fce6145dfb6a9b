/* token_cmd.h — `cuzk token NAME [LIMITS...]`: a new bearer token for the HTTP API
 * (cuzk-api) and its line for the tokens file (docs/api.md, "Tokens"). */
#ifndef CUZK_TOKEN_CMD_H
#define CUZK_TOKEN_CMD_H

/* argv[0] is "token". Prints the token on the first line and the tokens file's line
 * (NAME SHA256HEX [limits as given]) on the second. Exit code: 0, usage 2, 10. */
int token_cmd_main(int argc, char **argv);

#endif
