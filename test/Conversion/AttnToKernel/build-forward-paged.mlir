// The forward kernel of a paged decode spec at the kernel level: the block table and the pool's
// rows (num_slots) are the last kernel parameters, and the producer's TMA loads of K and V address the pool through it
// (#attnk.addressing<paged, page = 16>), a tile of tile_n keys being tile_n / 16 boxes of one
// page each (tensor maps of 16-row boxes). The tile loop reads no block-table entry right
// before a load that needs it: each producer thread looks up the page of its key in the tile
// after next (attnk.page_lookup, carried by the loop) and loads the next tile's scales in the
// page it looked up one step before; lane i of each warp looks up box i's page of the tile the
// step refills, and the warps gather those pages (shfl idx) for the refill's copies
// (`pages(...)`).
// RUN: attn-opt %s --attn-normalize --attn-select-schedule --attn-build-kernel | FileCheck %s
// RUN: attn-opt %s --attn-normalize --attn-select-schedule --attn-build-kernel | FileCheck %s --check-prefix=LOOP

// CHECK-LABEL: attnk.kernel @paged_i8_decode(
// CHECK-SAME: %[[KMAP:[^:]+]]: !attnk.tensor_map<1x16x1x128xi8, none>, %[[VMAP:[^:]+]]: !attnk.tensor_map<1x16x1x128xi8, none>
// CHECK-SAME: %[[TABLE:[^:]+]]: memref<?x64xi32>, %[[SLOTS:[^:]+]]: i32) threads
// CHECK: attnk.tma_load %[[KMAP]][%{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}] #attnk.addressing<paged, page = 16> into %{{.+}} block_table(%[[TABLE]] : memref<?x64xi32>) : !attnk.tensor_map<1x16x1x128xi8, none>, !attnk.stage<16x128xi8, none>
// CHECK: attnk.tma_load %[[VMAP]][%{{.+}}] #attnk.addressing<paged, page = 16> into %{{.+}} block_table(%[[TABLE]] : memref<?x64xi32>)
// CHECK-NOT: #attnk.addressing<contiguous>
// CHECK: attnk.kernel @paged_i8_combine

// LOOP-LABEL: attnk.kernel @paged_i8_decode(
// LOOP-SAME: %[[TABLE:[^:]+]]: memref<?x64xi32>, %{{[^:]+}}: i32) threads
// The first tile's scales in the page of the thread's key; the page of its key in tile 1.
// LOOP: %[[P0:.+]] = attnk.page_lookup %[[TABLE]][%{{.+}}, %[[K0:.+]]] page = 16 : memref<?x64xi32>
// LOOP-NEXT: attnk.forward.key_scales args(%[[K0]], %[[P0]] : i32, i32)
// LOOP: %[[P1:.+]] = attnk.page_lookup %[[TABLE]]
// LOOP: scf.for %{{.+}} = %{{.+}} to %{{.+}} step %{{.+}} iter_args(%{{.+}} = %{{.+}}, %{{.+}} = %{{.+}}, %[[PN:.+]] = %[[P1]]) -> (f32, f32, i32)
// Before the stage waits: the refill's page, one box per lane; the next tile's scales in the
// carried page; the page of the key after it.
// LOOP: %[[LANE:.+]] = attnk.page_lookup %[[TABLE]]
// LOOP: attnk.forward.key_scales args(%{{.+}}, %[[PN]] : i32, i32)
// LOOP: %[[PNN:.+]] = attnk.page_lookup %[[TABLE]]
// LOOP: attnk.ring.wait
// LOOP: attnk.ring.release
// LOOP: %[[B0:.+]] = nvvm.shfl.sync idx %{{.+}}, %[[LANE]], %{{.+}}, %{{.+}} : i32 -> i32
// LOOP-COUNT-7: nvvm.shfl.sync idx %{{.+}}, %[[LANE]]
// LOOP: attnk.tma_load %{{.+}} #attnk.addressing<paged, page = 16> into %{{.+}} pages(%[[B0]])
// LOOP-NOT: block_table(
// LOOP: scf.yield %{{.+}}, %{{.+}}, %[[PNN]] : f32, f32, i32

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
