package main

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"

	"github.com/gpugate/gpugate/baseline"
	"github.com/gpugate/gpugate/internal/escape"
	"github.com/gpugate/gpugate/trace/ncu"
)

// showNCU lists, for baseline show, the Nsight Compute deep-dive stored
// with the newest of the shown runs that has one (gpugate baseline refresh
// with perf.yaml deep_dive records them), one line per kernel.
func showNCU(ctx context.Context, w io.Writer, store *baseline.Store, pts []runPoint) error {
	ids := make([]int64, len(pts))
	at := map[int64]runPoint{}
	for i, p := range pts {
		ids[i] = p.RunID
		at[p.RunID] = p
	}
	rows, err := store.NCUKernels(ctx, ids)
	if err != nil {
		return err
	}
	withData := map[int64]bool{}
	for _, r := range rows {
		withData[r.RunID] = true
	}
	if len(rows) == 0 {
		fmt.Fprintf(w, "\nno Nsight Compute deep-dive stored with these runs (perf.yaml deep_dive and gpugate baseline refresh record one where ncu can profile)\n")
		return nil
	}
	newest := rows[0].RunID
	p := at[newest]
	fmt.Fprintf(w, "\nNsight Compute deep-dive stored with run %d (%s, %s; %d of the %d runs have one):\n", newest, escape.Terminal(short(p.Commit)), p.Created.UTC().Format("2006-01-02 15:04"), len(withData), len(pts))
	for _, r := range rows {
		if r.RunID != newest {
			break
		}
		var l ncu.Launch
		desc := "unreadable launch data"
		if json.Unmarshal(r.Launch, &l) == nil {
			desc = ncu.Describe(&l)
		}
		ver := ""
		if r.Writer != "" {
			ver = " (ncu " + escape.Terminal(r.Writer) + ")"
		}
		fmt.Fprintf(w, "  %d %s: %s%s\n", r.Rank, escape.Terminal(cmp.Or(r.Function, r.Kernel)), desc, ver)
	}
	return nil
}
