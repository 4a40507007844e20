//go:build !linux

package runner

// Elsewhere than Linux there is no subreaper: the job's process group is
// all the runner kills.
func becomeSubreaper() {}

func killLeftovers(pgid int, token string, before map[int]bool) []string { return nil }

func descendants() map[int]bool { return nil }
