# One probe per x86-64 relocation type the runtime linker supports (System V AMD64 psABI 4.4).
#   void reloc_probe(void *const *buffers, const int64_t *scalars, int64_t begin, int64_t end)
# out = (uint64_t *)buffers[0]; out[k] is read through relocation k and must equal
# 0x1000 + k (see elf_link_test.cpp). Assembled with llvm-mc.
        .text
        .globl  reloc_probe
        .type   reloc_probe,@function
reloc_probe:
        pushq   %rbx
        movq    (%rdi), %rbx
        movabsq $probe_data, %rax                 # R_X86_64_64
        movq    (%rax), %rax
        movq    %rax, 0(%rbx)
        leaq    probe_data+8(%rip), %rax          # R_X86_64_PC32
        movq    (%rax), %rax
        movq    %rax, 8(%rbx)
        movl    $probe_data+16, %eax              # R_X86_64_32 (zero-extended immediate)
        movq    (%rax), %rax
        movq    %rax, 16(%rbx)
        movq    probe_data+24, %rax               # R_X86_64_32S (sign-extended displacement)
        movq    %rax, 24(%rbx)
        movq    probe_global@GOTPCREL(%rip), %rax # R_X86_64_REX_GOTPCRELX
        movq    32(%rax), %rax
        movq    %rax, 32(%rbx)
        movq    (%rip), %rax                      # R_X86_64_GOTPCREL (plain, written out)
        .reloc  .-4, R_X86_64_GOTPCREL, probe_global-4
        movq    40(%rax), %rax
        movq    %rax, 40(%rbx)
        leaq    probe_rel(%rip), %rax             # PC32 to .data.rel, which holds a PC64
        addq    (%rax), %rax
        movq    (%rax), %rax
        movq    %rax, 48(%rbx)
        leaq    56(%rbx), %rdi                    # memset(out + 7, 0, 8), then out[7] = 0x1007
        xorl    %esi, %esi
        movl    $8, %edx
        call    memset@PLT                        # R_X86_64_PLT32 to an import (stub)
        movq    $0x1007, 56(%rbx)
        movq    memcpy@GOTPCREL(%rip), %rax       # R_X86_64_REX_GOTPCRELX to an import (GOT)
        leaq    64(%rbx), %rdi                    # memcpy(out + 8, probe_data + 64, 8)
        leaq    probe_data+64(%rip), %rsi
        movl    $8, %edx
        callq   *%rax
        leaq    72(%rbx), %rdi                    # tail call: memmove(out + 9, probe_data + 72, 8)
        leaq    probe_data+72(%rip), %rsi
        movl    $8, %edx
        popq    %rbx
        jmp     memmove@PLT                       # R_X86_64_PLT32, tail position
        .size   reloc_probe, .-reloc_probe

        .section .rodata,"a",@progbits
        .p2align 4
        .globl  probe_global
probe_global:
probe_data:
        .quad   0x1000, 0x1001, 0x1002, 0x1003, 0x1004, 0x1005, 0x1006, 0x1007, 0x1008, 0x1009

        .section .data.rel,"aw",@progbits
        .p2align 3
probe_rel:
        .quad   probe_data+48-probe_rel           # assembled to R_X86_64_PC64 against .rodata
