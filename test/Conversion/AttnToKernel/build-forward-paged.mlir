// The forward kernel of a paged decode spec at the kernel level: the block table is the last
// kernel parameter, and the producer's TMA loads of K and V address the pool through it
// (#attnk.addressing<paged, page = 16>), a tile of tile_n keys being tile_n / 16 boxes of one
// page each (tensor maps of 16-row boxes).
// RUN: attn-opt %s --attn-normalize --attn-select-schedule --attn-build-kernel | FileCheck %s

// CHECK-LABEL: attnk.kernel @paged_i8_decode(
// CHECK-SAME: %[[KMAP:[^:]+]]: !attnk.tensor_map<1x16x1x128xi8, none>, %[[VMAP:[^:]+]]: !attnk.tensor_map<1x16x1x128xi8, none>
// CHECK-SAME: %[[TABLE:[^:]+]]: memref<?x64xi32>) threads
// CHECK: attnk.tma_load %[[KMAP]][%{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}] #attnk.addressing<paged, page = 16> into %{{.+}} block_table(%[[TABLE]] : memref<?x64xi32>) : !attnk.tensor_map<1x16x1x128xi8, none>, !attnk.stage<16x128xi8, none>
// CHECK: attnk.tma_load %[[VMAP]][%{{.+}}] #attnk.addressing<paged, page = 16> into %{{.+}} block_table(%[[TABLE]] : memref<?x64xi32>)
// CHECK-NOT: #attnk.addressing<contiguous>
// CHECK: attnk.kernel @paged_i8_combine

func.func @paged_i8(%q: memref<?x1x16x128xbf16>, %k: memref<?x16x2x128xi8>, %v: memref<?x16x2x128xi8>,
                    %ks: memref<?x16x2xf32>, %vs: memref<?x16x2xf32>, %lens: memref<?xi32>,
                    %pages: memref<?x64xi32>, %o: memref<?x1x16x128xbf16>) {
  attn.attention decode ins(%q, %k, %v : memref<?x1x16x128xbf16>, memref<?x16x2x128xi8>, memref<?x16x2x128xi8>)
      k_scale(%ks : memref<?x16x2xf32>) v_scale(%vs : memref<?x16x2xf32>)
      seq_lens(%lens : memref<?xi32>) block_table(%pages : memref<?x64xi32>) outs(%o : memref<?x1x16x128xbf16>)
      {page_size = 16, k_quant = #attn.quant<i8, per_token_head>, v_quant = #attn.quant<i8, per_token_head>,
       target = #attn.target<sm_90a>}
  return
}
