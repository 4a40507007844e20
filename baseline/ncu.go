package baseline

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"slices"
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

// maxNCURank bounds a deep-dive kernel's rank: perf.yaml's
// deep_dive.kernels is at most 10, and the column is PostgreSQL's 32-bit
// INTEGER but SQLite's 64-bit one; bounded here, both backends refuse
// the same ranks (2^40 was stored by SQLite and refused by PostgreSQL).
const maxNCURank = 1000

// RecordNCU stores the deep-dive kernels of a stored run, in one
// transaction. Their RunID is runID.
func (s *Store) RecordNCU(ctx context.Context, runID int64, ks []NCUKernel) error {
	if s.readOnly {
		return s.wrap("record ncu results in", errReadOnly)
	}
	for _, k := range ks {
		if err := k.check(); err != nil {
			return s.wrap("record ncu results in", fmt.Errorf("run %d: %v", runID, err))
		}
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return s.wrap("record ncu results in", err)
	}
	defer tx.Rollback()
	if err := s.insertNCU(ctx, tx, runID, ks); err != nil {
		return s.wrap("record ncu results in", err)
	}
	return s.wrap("record ncu results in", tx.Commit())
}

// check refuses a kernel the store must not hold: an oversized or non-JSON
// launch, names that are not text.
func (k *NCUKernel) check() error {
	if k.Rank < 1 || k.Rank > maxNCURank {
		return fmt.Errorf("kernel rank %d is not 1 to %d", k.Rank, maxNCURank)
	}
	if len(k.Launch) > maxNCULaunch {
		return fmt.Errorf("kernel %d: launch is %d bytes, over the %d limit", k.Rank, len(k.Launch), maxNCULaunch)
	}
	if !json.Valid(k.Launch) {
		return fmt.Errorf("kernel %d: launch is not JSON", k.Rank)
	}
	for _, v := range []string{k.Kernel, k.Function, k.Writer} {
		if !utf8.ValidString(v) || strings.ContainsRune(v, 0) {
			return fmt.Errorf("kernel %d: a name is not valid UTF-8 text", k.Rank)
		}
	}
	return nil
}

// insertNCU adds checked kernels of run runID within tx.
func (s *Store) insertNCU(ctx context.Context, tx *sql.Tx, runID int64, ks []NCUKernel) error {
	for _, k := range ks {
		if _, err := s.exec(ctx, tx, `INSERT INTO ncu_kernels VALUES (?, ?, ?, ?, ?, ?)`, runID, k.Rank, k.Kernel, k.Function, k.Writer, string(compact(k.Launch))); err != nil {
			return err
		}
	}
	return nil
}

// ExportedNCUKernel is one deep-dive kernel of an exported run.
type ExportedNCUKernel struct {
	Rank     int             `json:"rank"`
	Kernel   string          `json:"kernel"`
	Function string          `json:"function_name"`
	Writer   string          `json:"ncu_version"`
	Launch   json.RawMessage `json:"launch"`
}

// exportNCU returns the deep-dive kernels of the given runs by run id.
func (s *Store) exportNCU(ctx context.Context, runIDs []int64) (map[int64][]ExportedNCUKernel, error) {
	ks, err := s.NCUKernels(ctx, runIDs)
	if err != nil {
		return nil, err
	}
	out := map[int64][]ExportedNCUKernel{}
	for _, k := range ks {
		out[k.RunID] = append(out[k.RunID], ExportedNCUKernel{k.Rank, k.Kernel, k.Function, k.Writer, json.RawMessage(k.Launch)})
	}
	for _, l := range out {
		slices.SortFunc(l, func(a, b ExportedNCUKernel) int { return a.Rank - b.Rank })
	}
	return out, nil
}

// importedNCU checks the kernels of an exported run and returns them as
// the store keeps them.
func importedNCU(xs []ExportedNCUKernel) ([]NCUKernel, error) {
	ks := make([]NCUKernel, len(xs))
	seen := map[int]bool{}
	for i, x := range xs {
		if x.Rank < 1 || seen[x.Rank] {
			return nil, fmt.Errorf("ncu_kernels: rank %d is not a new rank from 1", x.Rank)
		}
		seen[x.Rank] = true
		var launch map[string]any
		if err := json.Unmarshal(x.Launch, &launch); err != nil || launch == nil {
			return nil, fmt.Errorf("ncu_kernels: kernel %d: launch is not a JSON object", x.Rank)
		}
		ks[i] = NCUKernel{Rank: x.Rank, Kernel: x.Kernel, Function: x.Function, Writer: x.Writer, Launch: x.Launch}
		err := ks[i].check()
		if err == nil {
			err = checkNumbers(fmt.Sprintf("kernel %d launch", x.Rank), x.Launch)
		}
		if err != nil {
			return nil, fmt.Errorf("ncu_kernels: %v", err)
		}
	}
	return ks, nil
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
