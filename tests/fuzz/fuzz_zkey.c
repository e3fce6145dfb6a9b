/* fuzz_zkey.c — libFuzzer target: zkey_open on arbitrary bytes (seeds: the fixtures'
 * circuit_final.zkey). A valid key is also walked: every coefficient and the sizes the
 * stages derive from it. Build and run: tests/fuzz/run.sh. */
#include <stdint.h>
#include <string.h>

#include "zk/zkey.h"
#include "fuzz_file.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char path[64], err[1024];
    zkey z;
    int fd = fuzz_file(data, size, path, sizeof(path));

    if (fd < 0) return 0;
    memset(&z, 0, sizeof(z));
    if (zkey_open(&z, path, err, sizeof(err)) == 0) {
        for (uint64_t i = 0; i < z.ncoefs; i++) {
            uint32_t m, c, s;
            uint64_t v[8];

            zkey_coef(&z, i, &m, &c, &s, v);
        }
        zkey_close(&z);
    }
    close(fd);
    return 0;
}
