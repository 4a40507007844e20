package baseline

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"
)

// Migration 4 (both backends): the Nsight Compute deep-dive of a run, one
// row per profiled kernel. The launch is trace/ncu's Launch as JSON: its
// fields are many, optional, and grow with ncu's sections, and nothing
// queries them one by one.
const (
	sqliteNCUMigration = `CREATE TABLE ncu_kernels (
		run_id        INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
		rank          INTEGER NOT NULL,   -- 1 = the most regressed kernel of the deep-dive
		kernel        TEXT    NOT NULL,   -- the kernel's name as the trace has it
		function_name TEXT    NOT NULL,   -- the function name ncu matched
		ncu_version   TEXT    NOT NULL,   -- the Nsight Compute that wrote the report; '' unknown
		launch        TEXT    NOT NULL,   -- trace/ncu Launch JSON
		PRIMARY KEY (run_id, rank)
	);`
	pgNCUMigration = `CREATE TABLE ncu_kernels (
		run_id        BIGINT  NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
		rank          INTEGER NOT NULL,
		kernel        TEXT    NOT NULL,
		function_name TEXT    NOT NULL,
		ncu_version   TEXT    NOT NULL,
		launch        TEXT    NOT NULL,
		PRIMARY KEY (run_id, rank)
	);`
)

// NCUKernel is one kernel of a run's Nsight Compute deep-dive.
type NCUKernel struct {
	RunID int64
	// Rank is the kernel's place in the deep-dive, from 1.
	Rank     int
	Kernel   string // as the trace names it
	Function string // the function name ncu matched
	Writer   string // the Nsight Compute version that wrote the report
	Launch   []byte // trace/ncu Launch, JSON
}

// maxNCULaunch bounds one stored launch: a Launch holds its rule messages,
// a few KB; anything near this is not one.
const maxNCULaunch = 1 << 20

// RecordNCU stores the deep-dive kernels of a stored run, in one
// transaction. Their RunID is runID.
func (s *Store) RecordNCU(ctx context.Context, runID int64, ks []NCUKernel) error {
	if s.readOnly {
		return s.wrap("record ncu results in", errReadOnly)
	}
	for _, k := range ks {
		if len(k.Launch) > maxNCULaunch {
			return s.wrap("record ncu results in", fmt.Errorf("kernel %d of run %d: launch is %d bytes, over the %d limit", k.Rank, runID, len(k.Launch), maxNCULaunch))
		}
		if !json.Valid(k.Launch) {
			return s.wrap("record ncu results in", fmt.Errorf("kernel %d of run %d: launch is not JSON", k.Rank, runID))
		}
		for _, v := range []string{k.Kernel, k.Function, k.Writer} {
			if !utf8.ValidString(v) || strings.ContainsRune(v, 0) {
				return s.wrap("record ncu results in", fmt.Errorf("kernel %d of run %d: a name is not valid UTF-8 text", k.Rank, runID))
			}
		}
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return s.wrap("record ncu results in", err)
	}
	defer tx.Rollback()
	for _, k := range ks {
		if _, err := s.exec(ctx, tx, `INSERT INTO ncu_kernels VALUES (?, ?, ?, ?, ?, ?)`, runID, k.Rank, k.Kernel, k.Function, k.Writer, string(compact(k.Launch))); err != nil {
			return s.wrap("record ncu results in", err)
		}
	}
	return s.wrap("record ncu results in", tx.Commit())
}

// NCUKernels returns the deep-dive kernels stored with the given runs,
// newest run first (highest id), then by rank.
func (s *Store) NCUKernels(ctx context.Context, runIDs []int64) ([]NCUKernel, error) {
	if len(runIDs) == 0 {
		return nil, nil
	}
	marks := strings.TrimSuffix(strings.Repeat("?, ", len(runIDs)), ", ")
	args := make([]any, len(runIDs))
	for i, id := range runIDs {
		args[i] = id
	}
	rows, err := s.db.QueryContext(ctx, s.d.rebind(`SELECT run_id, rank, kernel, function_name, ncu_version, launch FROM ncu_kernels
		WHERE run_id IN (`+marks+`) ORDER BY run_id DESC, rank`), args...)
	if err != nil {
		return nil, s.wrap("read ncu results of", err)
	}
	defer rows.Close()
	var out []NCUKernel
	for rows.Next() {
		var k NCUKernel
		var launch string
		if err := rows.Scan(&k.RunID, &k.Rank, &k.Kernel, &k.Function, &k.Writer, &launch); err != nil {
			return nil, s.wrap("read ncu results of", err)
		}
		k.Launch = []byte(launch)
		out = append(out, k)
	}
	return out, s.wrap("read ncu results of", rows.Err())
}
