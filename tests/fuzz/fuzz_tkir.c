/* libFuzzer target: any bytes as textual Tile IR (.tkir) through the IR parser, the
 * verifier, the optimization passes at -O3 and the target passes for sm_90a, verifying
 * after every pass. A crash, a sanitizer report, an internal error (abort), or IR that a
 * pass leaves invalid is a bug; IR the parser or the verifier refuses is not. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "../../driver/driver.h"
#include "fuzz_ir.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fuzz_ir_run(data, size, false);
  return 0;
}
