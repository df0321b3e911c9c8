// One probe per aarch64 relocation type the runtime linker supports (AAELF64 5.7).
//   void reloc_probe(void *const *buffers, const int64_t *scalars, int64_t begin, int64_t end)
// out = (uint64_t *)buffers[0]; out[k] is read through relocation k and must equal
// 0x1000 + k (see elf_link_test.cpp). Assembled with llvm-mc.
        .text
        .globl  reloc_probe
        .type   reloc_probe,%function
reloc_probe:
        stp     x29, x30, [sp, #-32]!
        mov     x29, sp
        str     x19, [sp, #16]
        ldr     x19, [x0]
        adrp    x8, probe_data                        // ADR_PREL_PG_HI21
        add     x8, x8, :lo12:probe_data              // ADD_ABS_LO12_NC
        ldr     x9, [x8]
        str     x9, [x19, #0]
        adrp    x8, probe_data+8
        ldr     x9, [x8, :lo12:probe_data+8]          // LDST64_ABS_LO12_NC
        str     x9, [x19, #8]
        adrp    x8, probe_data+16
        ldr     w9, [x8, :lo12:probe_data+16]         // LDST32_ABS_LO12_NC
        str     x9, [x19, #16]
        adrp    x8, probe_data+24
        ldrh    w9, [x8, :lo12:probe_data+24]         // LDST16_ABS_LO12_NC
        str     x9, [x19, #24]
        adrp    x8, probe_data+32
        ldrb    w9, [x8, :lo12:probe_data+32]         // LDST8_ABS_LO12_NC (low byte 0x04)
        add     x9, x9, #0x1000
        str     x9, [x19, #32]
        adrp    x8, probe_data+48
        ldr     q0, [x8, :lo12:probe_data+48]         // LDST128_ABS_LO12_NC: out[6], out[7]
        str     q0, [x19, #48]
        adrp    x8, probe_abs
        ldr     x8, [x8, :lo12:probe_abs]             // .xword probe_data+40: ABS64
        ldr     x9, [x8]
        str     x9, [x19, #40]
        adrp    x8, :got:probe_global                 // ADR_GOT_PAGE
        ldr     x8, [x8, :got_lo12:probe_global]      // LD64_GOT_LO12_NC
        ldr     x9, [x8, #64]
        str     x9, [x19, #64]
        adr     x8, probe_near                        // ADR_PREL_LO21 (to .rodata)
        ldr     x9, [x8]
        str     x9, [x19, #72]
        adrp    x8, probe_rel32
        add     x8, x8, :lo12:probe_rel32
        ldrsw   x9, [x8]                              // .word probe_data+80 - .: PREL32
        add     x8, x8, x9
        ldr     x9, [x8]
        str     x9, [x19, #80]
        adrp    x8, probe_rel64
        add     x8, x8, :lo12:probe_rel64
        ldr     x9, [x8]                              // .xword probe_data+88 - .: PREL64
        add     x8, x8, x9
        ldr     x9, [x8]
        str     x9, [x19, #88]
        add     x0, x19, #96                          // memset(out + 12, 0, 8); out[12] = 0x100c
        mov     w1, #0
        mov     x2, #8
        bl      memset                                // CALL26 to an import (stub)
        mov     x9, #0x100c
        str     x9, [x19, #96]
        adrp    x8, :got:memcpy                       // import through the GOT
        ldr     x8, [x8, :got_lo12:memcpy]
        add     x0, x19, #104                         // memcpy(out + 13, probe_data + 104, 8)
        adrp    x1, probe_data+104
        add     x1, x1, :lo12:probe_data+104
        mov     x2, #8
        blr     x8
        add     x0, x19, #112                         // tail call: memmove(out + 14, ..., 8)
        adrp    x1, probe_data+112
        add     x1, x1, :lo12:probe_data+112
        mov     x2, #8
        ldr     x19, [sp, #16]
        ldp     x29, x30, [sp], #32
        b       memmove                               // JUMP26 to an import (stub)
        .size   reloc_probe, .-reloc_probe

        .section .rodata,"a",%progbits
        .p2align 4
        .globl  probe_global
probe_global:
probe_data:
        .xword  0x1000, 0x1001, 0x1002, 0x1003, 0x1004, 0x1005, 0x1006, 0x1007
        .xword  0x1008, 0x1009, 0x100a, 0x100b, 0x100c, 0x100d, 0x100e
probe_near:
        .xword  0x1009

        // In their own section so the assembler cannot resolve the differences itself.
        .section .rodata.rel,"a",%progbits
        .p2align 3
probe_rel32:
        .word   probe_data+80-probe_rel32
        .p2align 3
probe_rel64:
        .xword  probe_data+88-probe_rel64

        .section .data.rel.ro,"aw",%progbits
        .p2align 3
probe_abs:
        .xword  probe_data+40
