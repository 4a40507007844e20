package safefile

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Each way a job could plant a file where gpugate reads one: refused at
// once, the error naming the file and why, never what it holds.
func TestRefused(t *testing.T) {
	dir := t.TempDir()
	secret := filepath.Join(t.TempDir(), "secret")
	os.WriteFile(secret, []byte("p-secret-content"), 0o600)
	os.WriteFile(filepath.Join(dir, "ok.json"), []byte("{}"), 0o644)
	os.WriteFile(filepath.Join(dir, "big.json"), make([]byte, 2048), 0o644)
	os.Symlink(secret, filepath.Join(dir, "link.json"))
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo.json"), 0o644); err != nil {
		t.Fatal(err)
	}
	os.Mkdir(filepath.Join(dir, "dir.json"), 0o755)
	d, err := OpenDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	// The folder itself replaced by a link after gpugate opened it: its
	// files are still the folder's.
	moved := dir + ".moved"
	if err := os.Rename(dir, moved); err != nil {
		t.Fatal(err)
	}
	other := t.TempDir()
	os.WriteFile(filepath.Join(other, "ok.json"), []byte("p-secret-content"), 0o644)
	os.Symlink(other, dir)
	defer os.Rename(moved, dir)

	for _, c := range []struct{ name, want string }{
		{"link.json", "refused: a symbolic link"},
		{"fifo.json", "refused: not a regular file (a named pipe)"},
		{"dir.json", "refused: not a regular file (a folder)"},
		{"big.json", "refused: larger than its limit of 1 KiB (2048 bytes)"},
		{"../x", "refused: not a file of"},
	} {
		done := make(chan error, 1)
		go func() { _, err := d.ReadFile(filepath.Join(dir, c.name), 1024); done <- err }()
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("%s: %v, want %q", c.name, err, c.want)
			}
			if err != nil && strings.Contains(err.Error(), "secret") {
				t.Errorf("%s: the error quotes the target: %v", c.name, err)
			}
			if c.name != "../x" && !errors.Is(err, ErrNotRegular) && !errors.Is(err, ErrTooLarge) {
				t.Errorf("%s: %v is neither ErrNotRegular nor ErrTooLarge", c.name, err)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("%s: still waiting after 5s", c.name)
		}
	}
	b, err := d.ReadFile(filepath.Join(dir, "ok.json"), 1024)
	if err != nil || string(b) != "{}" {
		t.Errorf("ok.json through the folder opened first: %q %v, want {} (not the file the link leads to)", b, err)
	}
	names, err := d.Glob("*.json")
	if err != nil || len(names) != 5 {
		t.Errorf("glob: %v %v", names, err)
	}
	// By path: the same checks on the file itself.
	if _, err := ReadFile(filepath.Join(moved, "link.json"), 0); !errors.Is(err, ErrNotRegular) {
		t.Errorf("ReadFile of a link: %v", err)
	}
}
