#!/bin/sh
# torchrun-debian.sh ARGS...: torchrun for a PyTorch whose TCPStore was built
# without libuv (Debian's python3-torch 2.x: "use_libuv was requested but
# PyTorch was build without libuv support"). Every torchrun rendezvous
# (static, c10d over TCP) makes a TCPStore with use_libuv=True, which
# USE_LIBUV=0 does not reach; so:
#   --rdzv-backend=c10d --rdzv-conf=store_type=file   rendezvous through a file
#   TORCH_DISABLE_SHARE_RDZV_TCP_STORE=1              no shared TCPStore server
#                                                     made by the agent
#   USE_LIBUV=0                                       the workers' own store
#                                                     (init_process_group env://)
#                                                     uses the legacy backend
#   --local-addr=127.0.0.1                            one node: where the host
#                                                     name does not resolve (a
#                                                     chroot, a bare container)
# PYTHON (default python3) runs torch.distributed.run, which is torchrun.
set -eu
export USE_LIBUV=0 TORCH_DISABLE_SHARE_RDZV_TCP_STORE=1
store=$(mktemp -u "${TMPDIR:-/tmp}/torchrun-rdzv.XXXXXX")
trap 'rm -f "$store"' EXIT
"${PYTHON:-python3}" -m torch.distributed.run --nproc_per_node="${NPROC:-2}" --local-addr=127.0.0.1 \
	--rdzv-backend=c10d --rdzv-endpoint="$store" --rdzv-conf=store_type=file "$@"
