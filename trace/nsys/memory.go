package nsys

import (
	"fmt"
	"strings"

	"github.com/gpugate/gpugate/internal/sqlitescan"
	"github.com/gpugate/gpugate/trace"
)

// CUDA memory usage. nsys profile --cuda-memory-usage=true records every
// device memory allocation and free the CUDA driver sees in
// CUDA_GPU_MEMORY_USAGE_EVENTS (2022.4 schema 3.0.0: start, globalPid,
// deviceId, contextId, address, pc, bytes, memKind, memoryOperationType
// REFERENCES ENUM_CUDA_DEV_MEM_EVENT_OPER: 0 allocation, 1 deallocation,
// name, correlationId, memory pool columns). bytes is the size in both
// directions. These are the driver's allocations (cudaMalloc, a pool's
// growth), which under PyTorch's caching allocator are its reserved
// segments, not tensors; and the table has no totals. The events become
// relative trace.MemEvents (Bytes signed by the operation, no
// MemTotals): the analysis reports alloc_growth from them.

const memoryTable = "CUDA_GPU_MEMORY_USAGE_EVENTS"

// memory reads the CUDA memory usage table, where the export has it, into
// the profiles of the processes that made the calls. Events of processes
// without a profile (no GPU work, no ranges) are left out.
func (r *reader) memory(procs map[int32]*trace.Profile) error {
	q, _, err := r.selectSQL(memoryTable, []string{"start", "globalPid", "deviceId", "bytes", "memoryOperationType"}, []string{"memKind"})
	if err != nil || q == "" {
		return err
	}
	alloc, free, err := r.memOperations()
	if err != nil {
		return err
	}
	byProc := map[int32][]trace.MemEvent{}
	var bad, other int
	err = query(r.db, q, func(st *sqlitescan.Stmt) error {
		for i := range 5 {
			if st.Type(i) != sqlitescan.Integer {
				bad++
				return nil
			}
		}
		t, dev, n, op := st.Int64(0), st.Int64(2), st.Int64(3), st.Int64(4)
		if t < 0 || t > 1<<62 || dev < 0 || dev >= 1<<16 || n < 0 {
			bad++
			return nil
		}
		switch op {
		case alloc:
		case free:
			n = -n
		default:
			other++
			return nil
		}
		pid := pidOf(st.Int64(1))
		byProc[pid] = append(byProc[pid], trace.MemEvent{Time: t, Bytes: n, Device: int32(dev), Flags: trace.MemCUDA})
		return nil
	})
	if err != nil {
		return fmt.Errorf("read %s: %w", memoryTable, err)
	}
	if bad > 0 {
		r.warnf("%s: %d rows dropped: a time, device or size missing or out of range", memoryTable, bad)
	}
	if other > 0 {
		r.warnf("%s: %d rows of an operation other than allocation and deallocation left out", memoryTable, other)
	}
	for pid, ev := range byProc {
		if p := procs[pid]; p != nil {
			p.Memory = ev
			p.SortMemory()
		}
	}
	return nil
}

// memOperations returns the ids of allocation and deallocation: from
// ENUM_CUDA_DEV_MEM_EVENT_OPER where the export has it (by symbol), else
// the documented 0 and 1.
func (r *reader) memOperations() (alloc, free int64, err error) {
	alloc, free = 0, 1
	ok, err := r.table("ENUM_CUDA_DEV_MEM_EVENT_OPER")
	if err != nil || !ok {
		return alloc, free, err
	}
	err = query(r.db, `SELECT id, name FROM ENUM_CUDA_DEV_MEM_EVENT_OPER`, func(st *sqlitescan.Stmt) error {
		if st.Type(0) != sqlitescan.Integer {
			return nil
		}
		switch name := strings.ToUpper(st.String(1)); {
		case strings.HasSuffix(name, "DEALLOCATION"):
			free = st.Int64(0)
		case strings.HasSuffix(name, "ALLOCATION"):
			alloc = st.Int64(0)
		}
		return nil
	})
	return alloc, free, err
}
