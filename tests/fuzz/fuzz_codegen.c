/* libFuzzer target: any bytes as textual Tile IR through everything fuzz_tkir.c runs and
 * then the GPU back end to PTX (LLVM's NVPTX target, libdevice linked): whatever the
 * verifier accepts must compile or be refused with a diagnostic, never abort, crash or
 * trip LLVM's verifier. Slower per input than fuzz_tkir (LLVM runs each time). */
#include <stddef.h>
#include <stdint.h>

#include "fuzz_ir.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fuzz_ir_run(data, size, true);
  return 0;
}
