// Paged decode over asymmetric pools (uint8 codes with zero points, stored per page as the
// scales are). At the kernel level the producer's attnk.forward.key_scales yields the K and V
// zero points of the thread's key after its scales, read in the page it looked up before; the
// loop carries them into the one tile conversion (attnk.convert_tile … zero_points) of K and V.
// RUN: attn-opt %s --attn-normalize --attn-select-schedule --attn-build-kernel | FileCheck %s --check-prefix=KIR
// In the lowered kernel the zero point is read at the scales' pool row, its page clamped into
// [0, num_slots / P) (no table entry reads outside the pool), and the conversion stages it as
// its row's constant 2^23 + z, which it subtracts from each code's magic float.
// RUN: attn-opt %s --attn-normalize --attn-select-schedule --attn-build-kernel --convert-attn-to-nvvm --convert-attnk-to-nvvm | FileCheck %s --check-prefix=LL
// Signed codes with zero points (per_token, page 64): the constant is 2^23 + 128 + z.
// RUN: attn-opt %s --attn-normalize --attn-select-schedule --attn-build-kernel --convert-attn-to-nvvm --convert-attnk-to-nvvm | FileCheck %s --check-prefix=I8

// KIR-LABEL: attnk.kernel @paged_u8_decode(
// KIR: %[[P0:.+]] = attnk.page_lookup %{{.+}} page = 16
// KIR-NEXT: %[[S0:.+]]:4 = attnk.forward.key_scales args(%{{.+}}, %[[P0]] : i32, i32)
// KIR-SAME: : f32, f32, f32, f32
// KIR: scf.for %{{.+}} = %{{.+}} to %{{.+}} step %{{.+}} iter_args(%{{.+}} = %[[S0]]#0, %{{.+}} = %[[S0]]#1, %[[KZ:[^ ]+]] = %[[S0]]#2, %[[VZ:[^ ]+]] = %[[S0]]#3, %[[PN:[^ ]+]] = %{{[^)]+}}) -> (f32, f32, f32, f32, i32)
// KIR: attnk.forward.key_scales args(%{{.+}}, %[[PN]] : i32, i32)
// KIR-SAME: : f32, f32, f32, f32
// KIR: attnk.convert_tile %{{.+}} into %{{.+}}#0 zero_points(%[[KZ]] : f32) rows(%{{.+}}) {part = #attnk.part<codes>, quant = [#attn.quant<ui8, per_token_head, asymmetric>]
// KIR: attnk.convert_tile %{{.+}} into %{{.+}}#1 zero_points(%[[VZ]] : f32) rows(%{{.+}}) {part = #attnk.part<codes>, quant = [#attn.quant<ui8, per_token_head, asymmetric>]
// KIR: attnk.convert_tile %{{.+}} into %{{.+}}#0 zero_points(%[[KZ]] : f32) {part = #attnk.part<codes>
// KIR: attnk.convert_tile %{{.+}} into %{{.+}}#1 zero_points(%[[VZ]] : f32) {part = #attnk.part<codes>

// LL-LABEL: llvm.func @paged_u8_decode(
// LL-SAME: %[[VSCALE:arg4]]: !llvm.ptr<1>
// LL-SAME: %[[KZERO:arg13]]: !llvm.ptr<1>
// LL-SAME: %[[SLOTS:arg16]]: i32)
// The first tile's K zero point, after the V scale: the page clamped into the pool ...
// LL: llvm.getelementptr %[[VSCALE]]
// LL: %[[POOL:.+]] = llvm.lshr %[[SLOTS]], %{{.+}} : i32
// LL-NEXT: %[[IN:.+]] = llvm.icmp "ult" %[[PG:[^,]+]], %[[POOL]] : i32
// LL: %[[LAST:.+]] = llvm.add %[[POOL]], %{{.+}} : i32
// LL-NEXT: %[[PGC:.+]] = llvm.select %[[IN]], %[[PG]], %[[LAST]] : i1, i32
// LL: %[[PROW:.+]] = llvm.mul %[[PGC]], %{{.+}} : i32
// LL: %[[ROW:.+]] = llvm.add %[[PROW]], %{{.+}} : i32
// ... its pool row (times the KV heads, plus the head) indexes k_zero ...
// LL: %[[R:.+]] = llvm.add %{{.+}}, %[[ROW]] : i32
// LL: %[[RH:.+]] = llvm.mul %[[R]], %{{.+}} : i32
// LL-NEXT: %[[IDX:.+]] = llvm.add %[[RH]], %{{.+}} : i32
// LL-NEXT: %[[IDX64:.+]] = llvm.sext %[[IDX]] : i32 to i64
// LL-NEXT: %[[ZPTR:.+]] = llvm.getelementptr %[[KZERO]][%[[IDX64]]]
// LL-NEXT: %[[ZB:.+]] = llvm.load %[[ZPTR]] invariant {alignment = 1 : i64} : !llvm.ptr<1> -> i8
// LL-NEXT: %[[Z:.+]] = llvm.uitofp %[[ZB]] : i8 to f32
// ... is carried by the tile loop into K's conversion: 2^23 + z staged per row ...
// LL: scf.for %{{.+}} = %{{.+}} to %{{.+}} step %{{.+}} iter_args(%{{[^ ]+}} = %{{[^,]+}}, %{{[^ ]+}} = %{{[^,]+}}, %[[ZA:[^ ]+]] = %[[Z]],
// LL: %[[MAGIC:.+]] = llvm.fadd %[[ZA]], %{{.+}} : f32
// LL: %[[ZS:.+]] = llvm.mlir.constant([[ZOFF:[0-9]{5,}]] : i32) : i32
// LL-NEXT: %[[ZSA:.+]] = llvm.add %{{.+}}, %[[ZS]] : i32
// LL-NEXT: %[[ZSP:.+]] = llvm.getelementptr %{{.+}}[%[[ZSA]]]
// LL-NEXT: llvm.store %[[MAGIC]], %[[ZSP]] {alignment = 4 : i64} : f32, !llvm.ptr<3>
// LL: nvvm.barrier id = %{{.+}} number_of_threads = %{{.+}}
// ... and subtracted from the codes' magic floats.
// LL: %[[ZL:.+]] = llvm.mlir.constant([[ZOFF]] : i32) : i32
// LL-NEXT: %[[ZADDR:.+]] = llvm.add %{{.+}}, %[[ZL]] : i32
// LL-NEXT: %[[ZSPTR:.+]] = llvm.getelementptr %{{.+}}[%[[ZADDR]]]
// LL-NEXT: %[[ZROW:.+]] = llvm.load %[[ZSPTR]] {alignment = 4 : i64} : !llvm.ptr<3> -> f32
// LL: %[[CODE:.+]] = llvm.bitcast %{{.+}} : i32 to f32
// LL-NEXT: llvm.fsub %[[CODE]], %[[ZROW]] : f32

// I8-LABEL: llvm.func @paged_i8_asym_decode(
// I8: scf.for %{{.+}} = %{{.+}} to %{{.+}} step %{{.+}} iter_args(%{{[^ ]+}} = %{{[^,]+}}, %{{[^ ]+}} = %{{[^,]+}}, %[[ZA:[^ ]+]] = %{{[^,]+}},
// I8: %[[C:.+]] = llvm.mlir.constant(0x4B000080 : f32) : f32
// I8-NEXT: llvm.fadd %[[ZA]], %[[C]] : f32

func.func @paged_u8(%q: memref<?x1x16x128xbf16>, %k: memref<?x16x2x128xui8>, %v: memref<?x16x2x128xui8>,
                    %ks: memref<?x16x2xf32>, %vs: memref<?x16x2xf32>, %kz: memref<?x16x2xui8>,
                    %vz: memref<?x16x2xui8>, %lens: memref<?xi32>,
                    %pages: memref<?x64xi32>, %o: memref<?x1x16x128xbf16>) {
  attn.attention decode ins(%q, %k, %v : memref<?x1x16x128xbf16>, memref<?x16x2x128xui8>, memref<?x16x2x128xui8>)
      k_scale(%ks : memref<?x16x2xf32>) v_scale(%vs : memref<?x16x2xf32>)
      k_zero(%kz : memref<?x16x2xui8>) v_zero(%vz : memref<?x16x2xui8>)
      seq_lens(%lens : memref<?xi32>) block_table(%pages : memref<?x64xi32>) outs(%o : memref<?x1x16x128xbf16>)
      {page_size = 16, k_quant = #attn.quant<ui8, per_token_head, asymmetric>,
       v_quant = #attn.quant<ui8, per_token_head, asymmetric>, target = #attn.target<sm_90a>}
  return
}

func.func @paged_i8_asym(%q: memref<?x1x8x128xbf16>, %k: memref<?x64x2x128xi8>, %v: memref<?x64x2x128xi8>,
                         %ks: memref<?x64xf32>, %vs: memref<?x64xf32>, %kz: memref<?x64xi8>,
                         %vz: memref<?x64xi8>, %lens: memref<?xi32>,
                         %pages: memref<?x?xi32>, %o: memref<?x1x8x128xbf16>) {
  attn.attention decode ins(%q, %k, %v : memref<?x1x8x128xbf16>, memref<?x64x2x128xi8>, memref<?x64x2x128xi8>)
      k_scale(%ks : memref<?x64xf32>) v_scale(%vs : memref<?x64xf32>)
      k_zero(%kz : memref<?x64xi8>) v_zero(%vz : memref<?x64xi8>)
      seq_lens(%lens : memref<?xi32>) block_table(%pages : memref<?x?xi32>) outs(%o : memref<?x1x8x128xbf16>)
      {page_size = 64, k_quant = #attn.quant<i8, per_token, asymmetric>,
       v_quant = #attn.quant<i8, per_token, asymmetric>, target = #attn.target<sm_90a>}
  return
}
