/* SPDX-License-Identifier: MIT */
/* The shim's dlsym: a few instructions that ask cmt_dlsym_target (C,
 * dlsym_hook.c) where the call should go and then JUMP there with the
 * caller's arguments and, above all, the caller's return address.
 *
 * Why assembly: glibc's dlsym finds the calling object from its own return
 * address. RTLD_NEXT means "the next definition after the caller", and
 * RTLD_DEFAULT searches the caller's scope (which includes the local scope of
 * a library dlopen'ed with RTLD_LOCAL). A wrapper written in C that CALLS
 * glibc's dlsym would make every such lookup relative to libcumemtrace.so
 * and break other interposers (a second LD_PRELOAD library resolving
 * dlsym(RTLD_NEXT, "malloc") would get a definition after the shim, maybe
 * its own). A tail jump keeps glibc's view exact; C cannot promise a tail
 * call (not at -O0, not under sanitizers), these instructions do.
 *
 *   void *dlsym(void *handle, const char *name)
 *   {
 *       void *(*target)(void *, const char *) = cmt_dlsym_target(handle, name);
 *       return target(handle, name);   -- as a jump: same stack, same return address
 *   }
 */

#if defined(__x86_64__)

        .text
        .globl  dlsym
        .type   dlsym, @function
        .p2align 4
dlsym:
        .cfi_startproc
#if defined(__CET__)
        endbr64
#endif
        /* Keep the arguments across the call; the two pushes and the
         * 8-byte adjustment realign the stack to 16 bytes for the call. */
        pushq   %rdi
        .cfi_adjust_cfa_offset 8
        pushq   %rsi
        .cfi_adjust_cfa_offset 8
        subq    $8, %rsp
        .cfi_adjust_cfa_offset 8
        call    cmt_dlsym_target
        addq    $8, %rsp
        .cfi_adjust_cfa_offset -8
        popq    %rsi
        .cfi_adjust_cfa_offset -8
        popq    %rdi
        .cfi_adjust_cfa_offset -8
        jmp     *%rax
        .cfi_endproc
        .size   dlsym, .-dlsym

#elif defined(__aarch64__)

        .text
        .globl  dlsym
        .type   dlsym, %function
        .p2align 4
dlsym:
        .cfi_startproc
        hint    #34                     /* bti c: a no-op without BTI */
        stp     x29, x30, [sp, #-32]!
        .cfi_def_cfa_offset 32
        .cfi_offset x29, -32
        .cfi_offset x30, -24
        mov     x29, sp
        stp     x0, x1, [sp, #16]
        bl      cmt_dlsym_target
        mov     x16, x0                 /* x16: an indirect branch BTI accepts at "bti c" */
        ldp     x0, x1, [sp, #16]
        ldp     x29, x30, [sp], #32     /* x30 is the caller's return address again */
        .cfi_restore x29
        .cfi_restore x30
        .cfi_def_cfa_offset 0
        br      x16
        .cfi_endproc
        .size   dlsym, .-dlsym

#else
#error "preload/dlsym_entry.S has no dlsym entry stub for this architecture (x86_64 and aarch64 are supported)"
#endif

        .section .note.GNU-stack, "", %progbits
