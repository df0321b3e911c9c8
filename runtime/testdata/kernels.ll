; Test kernels in LLVM IR, compiled with llc-19 for x86-64 and aarch64, with
; -relocation-model=static and =pic: the relocations LLVM itself emits for constant pools,
; tables, jump tables, function pointer tables, GOT accesses and libcalls. No datalayout or
; triple here: llc takes them from -mtriple. Every kernel follows the capture ABI:
;   void entry(void *const *buffers, const int64_t *scalars, int64_t begin, int64_t end)

@ll_table = internal constant [8 x float] [float 1.0, float 2.0, float 3.0, float 4.0,
                                           float 5.0, float 6.0, float 7.0, float 8.0]
; Not dso_local and not internal: under -relocation-model=pic it is reached through the GOT.
@ll_gtable = constant [4 x float] [float 10.0, float 20.0, float 30.0, float 40.0]
@ll_fnptrs = internal constant [2 x ptr] [ptr @ll_twice, ptr @ll_plus100]

declare float @expf(float)
declare void @llvm.memcpy.p0.p0.i64(ptr, ptr, i64, i1)

define internal float @ll_twice(float %x) noinline {
  %r = fmul float %x, 2.0
  ret float %r
}

define internal float @ll_plus100(float %x) noinline {
  %r = fadd float %x, 100.0
  ret float %r
}

; y[4i..4i+3] = x[4i..4i+3] * <0.5, 1.5, -2, 3.25> + 0.1 ; work unit: groups of 4 floats.
define void @ll_affine4(ptr %buffers, ptr %scalars, i64 %begin, i64 %end) {
entry:
  %x = load ptr, ptr %buffers
  %yp = getelementptr ptr, ptr %buffers, i64 1
  %y = load ptr, ptr %yp
  br label %check
check:
  %i = phi i64 [ %begin, %entry ], [ %next, %body ]
  %done = icmp sge i64 %i, %end
  br i1 %done, label %exit, label %body
body:
  %off = mul i64 %i, 4
  %xi = getelementptr float, ptr %x, i64 %off
  %yi = getelementptr float, ptr %y, i64 %off
  %v = load <4 x float>, ptr %xi, align 4
  %m = fmul <4 x float> %v, <float 0.5, float 1.5, float -2.0, float 3.25>
  %a = fadd <4 x float> %m, <float 0x3FB99999A0000000, float 0x3FB99999A0000000,
                             float 0x3FB99999A0000000, float 0x3FB99999A0000000>
  store <4 x float> %a, ptr %yi, align 4
  %next = add i64 %i, 1
  br label %check
exit:
  ret void
}

; y[i] = x[i] + ll_table[i % 8] + ll_gtable[i % 4]
define void @ll_tables(ptr %buffers, ptr %scalars, i64 %begin, i64 %end) {
entry:
  %x = load ptr, ptr %buffers
  %yp = getelementptr ptr, ptr %buffers, i64 1
  %y = load ptr, ptr %yp
  br label %check
check:
  %i = phi i64 [ %begin, %entry ], [ %next, %body ]
  %done = icmp sge i64 %i, %end
  br i1 %done, label %exit, label %body
body:
  %xi = getelementptr float, ptr %x, i64 %i
  %xv = load float, ptr %xi
  %k8 = and i64 %i, 7
  %tp = getelementptr [8 x float], ptr @ll_table, i64 0, i64 %k8
  %tv = load float, ptr %tp
  %k4 = and i64 %i, 3
  %gp = getelementptr [4 x float], ptr @ll_gtable, i64 0, i64 %k4
  %gv = load float, ptr %gp
  %s1 = fadd float %xv, %tv
  %s2 = fadd float %s1, %gv
  %yi = getelementptr float, ptr %y, i64 %i
  store float %s2, ptr %yi
  %next = add i64 %i, 1
  br label %check
exit:
  ret void
}

; y[i] = expf(x[i])
define void @ll_exp(ptr %buffers, ptr %scalars, i64 %begin, i64 %end) {
entry:
  %x = load ptr, ptr %buffers
  %yp = getelementptr ptr, ptr %buffers, i64 1
  %y = load ptr, ptr %yp
  br label %check
check:
  %i = phi i64 [ %begin, %entry ], [ %next, %body ]
  %done = icmp sge i64 %i, %end
  br i1 %done, label %exit, label %body
body:
  %xi = getelementptr float, ptr %x, i64 %i
  %xv = load float, ptr %xi
  %e = call float @expf(float %xv)
  %yi = getelementptr float, ptr %y, i64 %i
  store float %e, ptr %yi
  %next = add i64 %i, 1
  br label %check
exit:
  ret void
}

; Copies floats [begin, end) of buffers[0] to buffers[1] with one memcpy call.
define void @ll_copy(ptr %buffers, ptr %scalars, i64 %begin, i64 %end) {
entry:
  %x = load ptr, ptr %buffers
  %yp = getelementptr ptr, ptr %buffers, i64 1
  %y = load ptr, ptr %yp
  %src = getelementptr float, ptr %x, i64 %begin
  %dst = getelementptr float, ptr %y, i64 %begin
  %n = sub i64 %end, %begin
  %bytes = mul i64 %n, 4
  call void @llvm.memcpy.p0.p0.i64(ptr %dst, ptr %src, i64 %bytes, i1 false)
  ret void
}

; y[i] = ll_fnptrs[i % 2](x[i]): a table of absolute code addresses (R_X86_64_64, ABS64).
define void @ll_dispatch(ptr %buffers, ptr %scalars, i64 %begin, i64 %end) {
entry:
  %x = load ptr, ptr %buffers
  %yp = getelementptr ptr, ptr %buffers, i64 1
  %y = load ptr, ptr %yp
  br label %check
check:
  %i = phi i64 [ %begin, %entry ], [ %next, %body ]
  %done = icmp sge i64 %i, %end
  br i1 %done, label %exit, label %body
body:
  %xi = getelementptr float, ptr %x, i64 %i
  %xv = load float, ptr %xi
  %k = and i64 %i, 1
  %fp = getelementptr [2 x ptr], ptr @ll_fnptrs, i64 0, i64 %k
  %f = load ptr, ptr %fp
  %r = call float %f(float %xv)
  %yi = getelementptr float, ptr %y, i64 %i
  store float %r, ptr %yi
  %next = add i64 %i, 1
  br label %check
exit:
  ret void
}

; y[i] = one of six formulas chosen by i % 6: a jump table.
define void @ll_switch(ptr %buffers, ptr %scalars, i64 %begin, i64 %end) {
entry:
  %x = load ptr, ptr %buffers
  %yp = getelementptr ptr, ptr %buffers, i64 1
  %y = load ptr, ptr %yp
  br label %check
check:
  %i = phi i64 [ %begin, %entry ], [ %next, %store ]
  %done = icmp sge i64 %i, %end
  br i1 %done, label %exit, label %body
body:
  %xi = getelementptr float, ptr %x, i64 %i
  %xv = load float, ptr %xi
  %k = urem i64 %i, 6
  switch i64 %k, label %c5 [ i64 0, label %c0
                             i64 1, label %c1
                             i64 2, label %c2
                             i64 3, label %c3
                             i64 4, label %c4 ]
c0:
  %r0 = fadd float %xv, 1.0
  br label %store
c1:
  %r1 = fmul float %xv, 3.0
  br label %store
c2:
  %r2 = fsub float %xv, 7.0
  br label %store
c3:
  %r3 = fneg float %xv
  br label %store
c4:
  %r4 = fmul float %xv, %xv
  br label %store
c5:
  %r5 = fadd float %xv, 0.25
  br label %store
store:
  %r = phi float [ %r0, %c0 ], [ %r1, %c1 ], [ %r2, %c2 ], [ %r3, %c3 ], [ %r4, %c4 ], [ %r5, %c5 ]
  %yi = getelementptr float, ptr %y, i64 %i
  store float %r, ptr %yi
  %next = add i64 %i, 1
  br label %check
exit:
  ret void
}
