// Package newfile creates files that gpugate writes beside what a job may
// have planted: never an existing file, never through a symlink.
package newfile

import (
	"os"
	"syscall"
)

// Create creates a new file p: an existing file or a symlink at p is an
// error, never opened or followed.
func Create(p string) (*os.File, error) {
	return os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o644)
}

// Write writes data to a new file p (Create).
func Write(p string, data []byte) error {
	f, err := Create(p)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// Replace writes data to p as a new file, removing what is at p first
// (a file, or a link or FIFO a job planted there, which is never followed
// nor opened).
func Replace(p string, data []byte) error {
	os.Remove(p)
	return Write(p, data)
}
