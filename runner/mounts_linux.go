//go:build linux

package runner

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"

	"golang.org/x/sys/unix"
)

// The init's mounts besides /proc, /dev/shm and the covers (setupNS): a
// private /tmp and /var/tmp, read-only folders, and the loopback of a
// network namespace of the job's own (issue 34).

// privateTmp mounts an empty tmpfs on /tmp and /var/tmp, so that the job
// reaches no file or socket of the machine's there (another job's, an
// agent's, a terminal multiplexer's), and bind-mounts each folder of keep
// that lies below them back at its own path: the job's folder, its run
// folder, nsys's TMPDIR. Each is opened (O_PATH) before the tmpfs hides
// it, and bound from that fd.
func privateTmp(keep []string) (kept []string, err error) {
	roots := []string{"/tmp", "/var/tmp"}
	type dir struct {
		path string
		fd   int
	}
	var ks []dir
	sort.Slice(keep, func(i, j int) bool { return len(keep[i]) < len(keep[j]) })
	for _, p := range keep {
		p = filepath.Clean(p)
		below := false
		for _, r := range roots {
			below = below || within(p, r)
		}
		for _, k := range ks {
			below = below && !within(p, k.path) // reachable through k
		}
		if !below {
			continue
		}
		fd, err := unix.Open(p, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			continue // gone, or not the job's to reach: nothing to keep
		}
		ks = append(ks, dir{p, fd})
	}
	defer func() {
		for _, k := range ks {
			unix.Close(k.fd)
		}
	}()
	for _, r := range roots {
		fi, err := os.Lstat(r)
		if err != nil || !fi.IsDir() {
			continue // none, or a link (to /tmp, made private already)
		}
		if err := unix.Mount("tmpfs", r, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=1777"); err != nil {
			return nil, fmt.Errorf("mount a private %s: %w", r, err)
		}
	}
	for _, k := range ks {
		if err := os.MkdirAll(k.path, 0o755); err != nil {
			return nil, fmt.Errorf("keep %s: %w", k.path, err)
		}
		// MS_REC: a mount below the folder, locked to the user namespace,
		// may not be revealed by a bind without it.
		if err := unix.Mount("/proc/self/fd/"+strconv.Itoa(k.fd), k.path, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
			return nil, fmt.Errorf("keep %s: %w", k.path, err)
		}
		kept = append(kept, k.path)
	}
	return kept, nil
}

// readOnly bind-mounts each folder (or file) of paths on itself,
// read-only. The remount keeps the flags the kernel locks on a mount that
// a user namespace inherited (nosuid, nodev, noexec, the atime mode):
// changing them is refused there.
func readOnly(paths []string) error {
	for _, p := range paths {
		_, err := os.Stat(p)
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrPermission) {
			continue
		}
		if err != nil {
			return fmt.Errorf("read-only %s: %w", p, err)
		}
		if err := remount(p, true); err != nil {
			return err
		}
	}
	return nil
}

// remount binds p onto itself and remounts the bind read-only or
// writable, keeping the flags a mount namespace made by an unprivileged
// user may not drop (nosuid, nodev, noexec, the atime ones: the kernel
// locks them).
func remount(p string, ro bool) error {
	what := "writable"
	if ro {
		what = "read-only"
	}
	if err := unix.Mount(p, p, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
		return fmt.Errorf("%s %s: %w", what, p, err)
	}
	var st unix.Statfs_t
	if err := unix.Statfs(p, &st); err != nil {
		return fmt.Errorf("%s %s: %w", what, p, err)
	}
	flags := uintptr(unix.MS_BIND | unix.MS_REMOUNT)
	if ro {
		flags |= unix.MS_RDONLY
	}
	for _, f := range []struct{ st, ms uintptr }{
		{unix.ST_NOSUID, unix.MS_NOSUID}, {unix.ST_NODEV, unix.MS_NODEV}, {unix.ST_NOEXEC, unix.MS_NOEXEC},
		{unix.ST_NOATIME, unix.MS_NOATIME}, {unix.ST_NODIRATIME, unix.MS_NODIRATIME}, {unix.ST_RELATIME, unix.MS_RELATIME},
	} {
		if uintptr(st.Flags)&f.st != 0 {
			flags |= f.ms
		}
	}
	if uintptr(st.Flags)&(unix.ST_NOATIME|unix.ST_RELATIME) == 0 {
		flags |= unix.MS_STRICTATIME
	}
	if err := unix.Mount("", p, "", flags, ""); err != nil {
		return fmt.Errorf("%s %s: %w", what, p, err)
	}
	return nil
}

// loopbackUp brings up lo, the only interface of a new network namespace
// (down when it is made), with CAP_NET_ADMIN in the namespace:
// SIOCSIFFLAGS, the ioctl `ip link set lo up` makes too.
func loopbackUp() error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("bring lo up: %w", err)
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return fmt.Errorf("bring lo up: %w", err)
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return fmt.Errorf("bring lo up: %w", err)
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
	if err := unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr); err != nil {
		return fmt.Errorf("bring lo up: %w", err)
	}
	return nil
}
