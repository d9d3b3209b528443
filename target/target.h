/*
 * target/ — what tk compiles for, as plain data every stage may read: the defaults a
 * compilation takes when told nothing.
 *
 * Contract:
 *  - This is the one place these defaults are decided; tkc, libtk, the IR (a kernel
 *    without launch attributes) and codegen read them from here.
 *  - Nothing here knows about CUDA or LLVM.
 * Prefix: tg_ / TG_.
 */
#ifndef TK_TARGET_H
#define TK_TARGET_H

/* -O level of tkc and of libtk when the options leave it 0. */
#define TG_DEFAULT_OPT_LEVEL 3
/* The architecture tkc compiles for without --arch (libtk picks the device's). */
#define TG_DEFAULT_ARCH "sm_90a"
/* The launch attributes of a kernel without @launch(warps = …, stages = …). */
#define TG_DEFAULT_WARPS 4
#define TG_DEFAULT_STAGES 1

#endif
