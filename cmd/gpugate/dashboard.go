package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"time"

	"github.com/gpugate/gpugate/baseline"
	"github.com/gpugate/gpugate/dashboard"
	"github.com/gpugate/gpugate/internal/escape"
)

var dashboardCmd = &command{
	usage: "dashboard -out DIR [-db PATH|URL] [-config perf.yaml] [-metrics step_time,kernels] [-branch main] [-serve ADDR]",
	short: "write a static web site of the store's history",
	long: `
Dashboard writes a static, self-contained web site of every run in the
store (SQLite or PostgreSQL) into DIR: an index of workloads with each
one's base-branch health (the newest baseline run of -branch, its verdict
against the branch's baseline runs before it, a small step-time trend and
the branch's change points) and, apart from it, the runs of pull requests
and other branches with their verdicts; a page per workload with one
chart per metric over its runs (one point per run: its mean step, ranks
combined as the gate combines them; series split by machine fingerprint,
pull-request runs apart from baseline runs) with change points marked and
the commit range around them; and a page per run with its step-time
breakdown, findings, largest kernels and run conditions (a run whose host
was busy is marked disturbed, under the host: margins of -config). The
pages load nothing from the network: publish DIR on
GitHub Pages or open it from disk. -serve ADDR serves it over HTTP at ADDR
(e.g. localhost:8080) until interrupted.

Change points are found in each machine's baseline runs with E-divisive
(energy statistic, permutation test at α=0.05, hierarchical bisection; see
docs/dashboard.md).`,
	flags: func(fs *flag.FlagSet) func(context.Context, io.Writer, io.Writer, []string) error {
		db := dbFlag(fs)
		out := fs.String("out", "", "folder to write the site into")
		metrics := fs.String("metrics", "", "comma-separated metrics to chart (default: the gate's default metrics)")
		serve := fs.String("serve", "", "serve the site over HTTP at `addr` after writing it")
		branch := fs.String("branch", "", "the base `branch` whose baseline runs are each workload's health (default: main, else master, else the branch with the most baseline runs)")
		cfgPath := fs.String("config", "", "the perf.yaml `file` whose host: margins mark runs on a busy host (default perf.yaml, when it exists)")
		return func(ctx context.Context, stdout, stderr io.Writer, args []string) error {
			if *out == "" {
				return usagef("want -out DIR")
			}
			if len(args) > 0 {
				return usagef("unexpected arguments: %s", strings.Join(args, " "))
			}
			o := dashboard.Options{Branch: *branch}
			m, err := hostMargins(*cfgPath)
			if err != nil {
				return err
			}
			o.Host = &m
			if *metrics != "" {
				o.Metrics = strings.Split(*metrics, ",")
			}
			store, err := openStore(ctx, *db, "", true)
			if err != nil {
				return err
			}
			runs, err := store.Runs(ctx, baseline.Filter{})
			store.Close()
			if err != nil {
				return err
			}
			site, err := dashboard.Write(*out, runs, o)
			if err != nil {
				if strings.HasPrefix(err.Error(), "dashboard: unknown metric") {
					return usagef("-metrics: %v", err)
				}
				return err
			}
			fmt.Fprintf(stdout, "wrote %d page(s) for %d workload(s) and %d run(s) into %s\n", len(site.Pages), len(site.Workloads), len(runs), escape.Terminal(filepath.Clean(*out)))
			if *serve == "" {
				return nil
			}
			return serveSite(ctx, stdout, *out, *serve)
		}
	},
}

// serveSite serves dir at addr until ctx ends (Ctrl-C).
func serveSite(ctx context.Context, stdout io.Writer, dir, addr string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("serve %s: %w", addr, err)
	}
	srv := &http.Server{Handler: http.FileServer(http.Dir(dir)), ReadHeaderTimeout: 10 * time.Second}
	fmt.Fprintf(stdout, "serving %s at http://%s/ (Ctrl-C stops)\n", escape.Terminal(dir), ln.Addr())
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(sctx)
	}()
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serve %s: %w", addr, err)
	}
	return nil
}
