package gate

// Cost is what a check spent on the machine: every run of the job it
// made (profiled runs, the unprofiled timing pass, A/B pairs, Nsight
// Compute deep-dive runs; not the stored baseline runs it compared with)
// and their wall time. A reviewer weighs a verdict against it; a team
// budgets its runners with it.
type Cost struct {
	// Runs is the number of job runs made.
	Runs int `json:"runs"`
	// WallSeconds is their wall time, summed (s): each run from its start
	// to its analysis being done.
	WallSeconds float64 `json:"wall_s"`
	// GPUs is the number of GPUs of the machine (the fingerprint's): a CI
	// runner holds them all while the job runs; 0 on a machine without.
	GPUs int `json:"gpus"`
	// GPUSeconds is WallSeconds × GPUs (s).
	GPUSeconds float64 `json:"gpu_s"`
}
