/* fuzz_wtns.c — libFuzzer target: wtns_open on arbitrary bytes (seeds: the fixtures'
 * witness.wtns), then the check against a real zkey (FUZZ_ZKEY, when set). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "zk/wtns.h"
#include "zk/zkey.h"
#include "fuzz_file.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static zkey key;
static int have_key = -1;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char path[64], err[1024];
    wtns w;
    int fd;

    if (have_key < 0) {
        const char *zp = getenv("FUZZ_ZKEY");

        have_key = zp && zkey_open(&key, zp, err, sizeof(err)) == 0;
    }
    fd = fuzz_file(data, size, path, sizeof(path));
    if (fd < 0) return 0;
    memset(&w, 0, sizeof(w));
    if (wtns_open(&w, path, err, sizeof(err)) == 0) {
        if (have_key) wtns_check_zkey(&w, &key, err, sizeof(err));
        wtns_close(&w);
    }
    close(fd);
    return 0;
}
