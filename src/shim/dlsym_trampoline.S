/* gpuleak's exported dlsym (research/CAPTURE.md 1.7): cudart, static or shared, finds the driver
 * with dlsym(libcuda, "cuGetProcAddress_v2"), so this is where every capture path starts.
 *
 * RTLD_NEXT is relative to the *caller*: a C wrapper would make every RTLD_NEXT lookup relative
 * to libgpuleak. So RTLD_NEXT tail-jumps straight into glibc's dlsym, keeping the caller's return
 * address; every other handle goes to gpuleak_dlsym_dispatch, which may wrap the result. */
    .text
    .globl  dlsym
    .type   dlsym, @function
dlsym:
    .cfi_startproc
    cmpq    $-1, %rdi
    jne     gpuleak_dlsym_dispatch
    movq    gpuleak_real_dlsym_ptr(%rip), %rax
    testq   %rax, %rax
    jz      1f
    jmp     *%rax
1:
    pushq   %rdi
    .cfi_adjust_cfa_offset 8
    pushq   %rsi
    .cfi_adjust_cfa_offset 8
    subq    $8, %rsp
    .cfi_adjust_cfa_offset 8
    call    gpuleak_resolve_real_dlsym
    addq    $8, %rsp
    .cfi_adjust_cfa_offset -8
    popq    %rsi
    .cfi_adjust_cfa_offset -8
    popq    %rdi
    .cfi_adjust_cfa_offset -8
    testq   %rax, %rax
    jz      2f
    jmp     *%rax
2:
    xorl    %eax, %eax
    ret
    .cfi_endproc
    .size   dlsym, .-dlsym
    .section .note.GNU-stack,"",@progbits
